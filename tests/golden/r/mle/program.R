x <- numeric(6e8)
cat(length(x), "\n")
