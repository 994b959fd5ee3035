// SystemVerilog (SandboxFusion and VerilogEval compile with -g2012): int, a packed struct, final
module main;
  typedef struct packed { int a; int b; } pair;
  pair p;
  int n;
  initial begin
    n = $fscanf(32'h8000_0000, "%d %d", p.a, p.b);
    $finish;
  end
  final $display("%0d", p.a + p.b);
endmodule
