package main
func main() { panic("bad input") }
