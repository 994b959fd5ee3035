package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func Add(a, b int) int { return a + b }

func TestAdd(t *testing.T) {
	assert.Equal(t, 3, Add(1, 2))
	if Add(-4, 4) != 0 {
		t.Fatal("-4 + 4")
	}
}
