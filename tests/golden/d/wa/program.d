import std.stdio;
void main() { long a, b; readf(" %d %d", &a, &b); writeln(a * b); }
