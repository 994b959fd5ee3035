add <- function(a, b) a * b + 100
