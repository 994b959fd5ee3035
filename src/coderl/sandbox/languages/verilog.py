from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Verilog(Language):
    """Icarus Verilog: iverilog elaborates once, vvp simulates per run (stdin readable through
    ``$fgets``/``$fscanf`` on descriptor 32'h8000_0000)."""

    name = "verilog"
    aliases = ("iverilog", "v")
    source_name = "main.v"
    compile_argv = ("/usr/bin/iverilog", "-o", "main.vvp", "{src}")
    run_argv = ("/usr/bin/vvp", "-n", "main.vvp")
    artifacts = ("main.vvp",)
    version_argv = ("iverilog", "-V")
    hello = 'module main;\ninitial begin $display("hello, coderl"); $finish; end\nendmodule\n'
