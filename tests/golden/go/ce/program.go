package main

func main() { x := }
