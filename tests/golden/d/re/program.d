void main() { throw new Exception("bad input"); }
