let x: number = 0;
for (;;) x++;
