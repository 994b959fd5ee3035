package main

import "testing"

func TestForever(t *testing.T) {
	for {
	}
}
