import std.stdio;
void main() { long x = 0; while (true) { x++; if (x == -1) writeln(x); } }
