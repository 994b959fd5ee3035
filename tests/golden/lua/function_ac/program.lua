function add(a, b)
  print("printing does not matter")
  return a + b
end
