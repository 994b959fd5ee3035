public static boolean double_check(String s) {
    for (int i = 0; i + 1 < s.length(); i++)
        if (Character.toLowerCase(s.charAt(i)) == Character.toLowerCase(s.charAt(i + 1))) return true;
    return false;
}
