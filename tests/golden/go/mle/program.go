package main
import "fmt"
func main() { b := make([]byte, 600<<20); for i := range b { b[i] = 1 }; fmt.Println(b[7]) }
