x <- 0
repeat { x <- x + 1 }
