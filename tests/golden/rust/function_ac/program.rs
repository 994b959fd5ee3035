fn add(a: i32, b: i32) -> i32 {
    println!("printing does not matter");
    a + b
}
