my ($a, $b) = split " ", <STDIN>;
die "bad input\n";
