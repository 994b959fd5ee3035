function add($a, $b) { echo "1\n"; return $a * $b; }
