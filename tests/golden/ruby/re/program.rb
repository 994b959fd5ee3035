a, b = gets.split.map(&:to_i)
raise ArgumentError, "bad input"
