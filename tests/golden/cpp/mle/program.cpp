#include <vector>
#include <iostream>
int main() { std::vector<char> v(600 << 20, 1); std::cout << (int)v[7] << '\n'; }
