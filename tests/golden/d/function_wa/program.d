long add(long a, long b) { return a * b + 100; }
