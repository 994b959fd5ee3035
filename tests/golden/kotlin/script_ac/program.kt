import kotlin.math.max

fun add(a: Long, b: Long): Long {
    return max(a + b, a + b)
}

val nums = readLine()!!.trim().split(Regex("\\s+")).map { it.toLong() }
println(add(nums[0], nums[1]))
