fun main() { val l = ArrayList<LongArray>(); while (true) l.add(LongArray(1 shl 20)) }
