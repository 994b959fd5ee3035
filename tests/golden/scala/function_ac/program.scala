def add(a: Int, b: Int): Int = {
  println("printing does not matter")
  a + b
}
