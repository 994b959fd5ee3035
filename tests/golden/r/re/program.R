v <- scan(file("stdin"), quiet = TRUE)
stop("bad input")
