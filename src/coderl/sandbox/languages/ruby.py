from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Ruby(Language):
    name = "ruby"
    aliases = ("rb",)
    source_name = "main.rb"
    run_argv = ("/usr/bin/ruby", "--disable-gems", "main.rb")
    version_argv = ("ruby", "--version")
    memory_error_markers = ("NoMemoryError", "failed to allocate memory")
    hello = 'puts "hello, coderl"\n'
