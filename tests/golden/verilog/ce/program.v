module main;
  initial begin
    $display("%0d", undeclared_wire)
  end
endmodule
