package gale

import "unsafe"

// cacheLine is the size of a CPU cache line on the platforms Gale runs on.
const cacheLine = 64

// lineSlice returns a slice of n zero elements whose backing array has a
// capacity of at least max(n, 1) and a size that is a multiple of
// cacheLine. The allocator places such an object on a cache-line boundary,
// so it shares no line with its neighbours: a small slice an executor
// reads or writes on every tuple (a router's task ids, an emit's targets,
// an outbox's tables) cannot sit in one line with another executor's, which
// a second core would keep taking away (false sharing). An 8-byte slice
// shares its line with seven other 8-byte objects.
func lineSlice[T any](n int) []T {
	return make([]T, n, lineCap[T](n))
}

// lineCap is the capacity lineSlice gives for n elements of T.
func lineCap[T any](n int) int {
	sz := int(unsafe.Sizeof(*new(T)))
	if sz == 0 {
		return n
	}
	g, b := sz, cacheLine // gcd(sz, cacheLine)
	for b != 0 {
		g, b = b, g%b
	}
	step := cacheLine / g // elements per whole number of lines
	return (max(n, 1) + step - 1) / step * step
}

// lineClone is a copy of s in a lineSlice.
func lineClone[T any](s []T) []T {
	c := lineSlice[T](len(s))
	copy(c, s)
	return c
}
