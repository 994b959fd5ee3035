sub add { my ($x, $y) = @_; return $x + $y; }
