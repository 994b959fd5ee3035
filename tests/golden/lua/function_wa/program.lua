function add(a, b) return a * b + 100 end
