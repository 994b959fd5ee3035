fn main() { let v = vec![1u8; 600 << 20]; println!("{}", v.iter().map(|&x| x as u64).sum::<u64>()); }
