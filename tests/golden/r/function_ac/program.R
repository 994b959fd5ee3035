add <- function(a, b) {
  cat("printing does not matter\n")
  a + b
}
