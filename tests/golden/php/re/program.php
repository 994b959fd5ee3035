<?php
fscanf(STDIN, "%d %d", $a, $b);
throw new Exception("bad input");
