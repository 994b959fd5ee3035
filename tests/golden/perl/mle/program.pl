my @a;
while (1) { push @a, "x" x 1_000_000; }
