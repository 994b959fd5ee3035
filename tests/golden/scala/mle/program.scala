object Main { def main(args: Array[String]): Unit = { val b = scala.collection.mutable.ArrayBuffer[Array[Long]](); while (true) b += new Array[Long](1 << 20) } }
