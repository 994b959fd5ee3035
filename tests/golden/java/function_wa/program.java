public static int add(int a, int b) { return a - b + 1000; }
