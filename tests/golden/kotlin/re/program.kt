fun main() { throw IllegalStateException("bad input") }
