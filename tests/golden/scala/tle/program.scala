object Main { def main(args: Array[String]): Unit = { var x = 0L; while (true) x += 1 } }
