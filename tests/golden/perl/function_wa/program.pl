sub add { my ($x, $y) = @_; print "3\n"; return $x - $y; }
