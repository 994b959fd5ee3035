fun add(a: Int, b: Int): Int {
    println("printing does not matter")
    return a + b
}
