fn add(a: i64, b: i64) -> i64 { a * b + 100 }
