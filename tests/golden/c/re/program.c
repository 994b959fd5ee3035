#include <stdio.h>
int main(void) { int *p = 0; long a, b; scanf("%ld %ld", &a, &b); if (a < 0) *p = 1; printf("%ld\n", a + b); return 0; }
