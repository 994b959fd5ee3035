import std.stdio;
void main() { int x = "s"; writeln(x); }
