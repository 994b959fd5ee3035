from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Lua(Language):
    name = "lua"
    source_name = "main.lua"
    run_argv = ("/usr/bin/lua5.4", "main.lua")
    version_argv = ("lua5.4", "-v")
    memory_error_markers = ("not enough memory",)
    hello = 'print("hello, coderl")\n'
    libraries_hello = 'local lu = require("luaunit")\nprint("hello, coderl")\n'
