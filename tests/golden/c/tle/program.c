int main(void) { volatile long x = 0; for (;;) x++; }
