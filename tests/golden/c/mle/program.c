#include <stdio.h>
#include <stdlib.h>
int main(void) { char *p = malloc(600L << 20); for (long i = 0; i < (600L << 20); i += 4096) p[i] = 1; printf("%d\n", p[4096]); return 0; }
