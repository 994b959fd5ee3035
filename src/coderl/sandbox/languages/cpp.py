from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Cpp(Language):
    name = "cpp"
    aliases = ("c++", "cxx", "cpp17")
    source_name = "main.cpp"
    compile_argv = ("/usr/bin/g++", "-O2", "-std=gnu++17", "-pipe", "-o", "main", "{src}", "-lm")
    run_argv = ("./main",)
    artifacts = ("main",)
    version_argv = ("g++", "--version")
    hello = '#include <iostream>\nint main() { std::cout << "hello, coderl" << std::endl; }\n'
