from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Verilog(Language):
    """Icarus Verilog: iverilog elaborates once, vvp simulates per run (stdin readable through
    ``$fgets``/``$fscanf`` on descriptor 32'h8000_0000). The language is IEEE 1800-2012
    (``-g2012``), as SandboxFusion and VerilogEval compile it: their testbenches use SystemVerilog
    (``int``, ``typedef struct packed``, ``final``, task default arguments), which the default
    generation rejects; the price is that its keywords (``logic``, ``bit``, ``int``) are reserved."""

    name = "verilog"
    aliases = ("iverilog", "v")
    source_name = "main.v"
    compile_argv = ("/usr/bin/iverilog", "-g2012", "-o", "main.vvp", "{src}")
    run_argv = ("/usr/bin/vvp", "-n", "main.vvp")
    artifacts = ("main.vvp",)
    version_argv = ("iverilog", "-V")
    hello = 'module main;\ninitial begin $display("hello, coderl"); $finish; end\nendmodule\n'
