package main

// The standard packages contest programs import: all of them come precompiled (read-only), so
// this compiles in about a second, well inside SandboxFusion's 10 s compile limit.
import (
	"bufio"
	"container/heap"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

type ints []int

func (h ints) Len() int            { return len(h) }
func (h ints) Less(i, j int) bool  { return h[i] < h[j] }
func (h ints) Swap(i, j int)       { h[i], h[j] = h[j], h[i] }
func (h *ints) Push(x interface{}) { *h = append(*h, x.(int)) }
func (h *ints) Pop() interface{}   { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

func main() {
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fields := strings.Fields(line)
	h := &ints{}
	for _, f := range fields {
		v, _ := strconv.Atoi(f)
		heap.Push(h, v)
	}
	sort.Ints(*h)
	fmt.Println(int(math.Round(float64((*h)[0] + (*h)[1]))))
}
