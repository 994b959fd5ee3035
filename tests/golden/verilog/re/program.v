module main;
  initial begin
    $fatal(1, "bad input");
  end
endmodule
