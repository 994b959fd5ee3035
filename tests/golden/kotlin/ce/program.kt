fun main() { val x: Int = "s"; println(x) }
