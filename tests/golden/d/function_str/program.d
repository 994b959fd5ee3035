import std.uni : toLower;
import std.array : array;

bool double_check(string s) {
    auto c = s.toLower.array;
    foreach (i; 1 .. c.length)
        if (c[i - 1] == c[i]) return true;
    return false;
}
