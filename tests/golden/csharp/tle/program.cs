class P { static void Main() { long x = 0; while (true) { x++; } } }
