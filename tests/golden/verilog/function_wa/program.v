function integer add;
  input integer a;
  input integer b;
  begin
    add = a * b + 100;
  end
endfunction
