func scale(xs []int, k int) []int {
	out := []int{}
	for _, x := range xs {
		out = append(out, x*k)
	}
	return out
}
