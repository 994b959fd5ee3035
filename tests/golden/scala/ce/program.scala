object Main { def main(args: Array[String]): Unit = { val x: Int = "s"; println(x) } }
