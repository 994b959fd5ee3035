module main;
  integer a, b, n;
  initial begin
    n = $fscanf(32'h8000_0000, "%d %d", a, b);
    $display("%0d", a + b);
    $finish;
  end
endmodule
