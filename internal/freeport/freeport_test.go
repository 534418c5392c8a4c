package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The ports found can be bound, all of them, and a bad count is refused.
func TestConsecutive(t *testing.T) {
	base, err := Consecutive(8)
	if err != nil {
		t.Fatal(err)
	}
	for p := base; p < base+8; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d of the 8 from %d: %v", p, base, err)
		}
		defer ln.Close()
	}
	if _, err := Consecutive(0); err == nil {
		t.Error("Consecutive(0): no error")
	}
}
