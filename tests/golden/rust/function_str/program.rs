fn double_check(s: &str) -> bool {
    let c: Vec<char> = s.to_lowercase().chars().collect();
    c.windows(2).any(|w| w[0] == w[1])
}
