public static long add(long a, long b) { return a - b + 1000; }
