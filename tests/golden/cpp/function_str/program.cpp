#include <string>
bool double_check(const std::string& s) {
    for (size_t i = 0; i + 1 < s.size(); i++)
        if (tolower(s[i]) == tolower(s[i + 1])) return true;
    return false;
}
