v <- scan(file("stdin"), quiet = TRUE
cat(v[1] + v[2], "\n", sep = "")
