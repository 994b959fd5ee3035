x = 0
loop { x += 1 }
