def add(a, b)
  puts "3"
  a - b
end
