<?php
$a = [];
while (true) { $a[] = str_repeat("x", 1000000) . count($a); }
