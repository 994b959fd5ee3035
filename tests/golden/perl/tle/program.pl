my $x = 0;
while (1) { $x++; }
