import "strings"

func double_check(s string) bool {
	r := []rune(strings.ToLower(s))
	for i := 0; i+1 < len(r); i++ {
		if r[i] == r[i+1] {
			return true
		}
	}
	return false
}
