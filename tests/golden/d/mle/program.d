import std.stdio;
void main() { auto a = new ubyte[](600 << 20); a[] = 1; writeln(a[7]); }
