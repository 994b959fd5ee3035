int main() { volatile long x = 0; for (;;) x++; }
