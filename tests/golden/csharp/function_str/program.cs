public static bool double_check(string s) {
    for (int i = 0; i + 1 < s.Length; i++)
        if (char.ToLower(s[i]) == char.ToLower(s[i + 1])) return true;
    return false;
}
