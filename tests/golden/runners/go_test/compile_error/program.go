package main

import "testing"

func TestAdd(t *testing.T) {
	var unused int
}
