function integer add;
  input integer a;
  input integer b;
  begin
    add = a + b;
  end
endfunction
