function scale(xs, k)
  local out = {}
  for i, x in ipairs(xs) do out[i] = x * k end
  return out
end
