long long add(long long a, long long b) { return a * b + 100; }
