package gale

import (
	"testing"
	"unsafe"
)

// TestHotStructsFillCacheLines checks that the structs an executor writes
// per tuple or per batch are whole cache lines long. The allocator places
// an object of a size class that is a multiple of 64 bytes on a 64-byte
// boundary, so such a struct shares no cache line with its neighbours;
// otherwise two executors' structs allocated side by side, written by two
// cores, pass a line back and forth on every write (false sharing). Word
// count noack in two Ps ran ~9% faster padded (4 of 4 interleaved rounds).
//
// When this fails, a field was added or removed: resize the struct's
// trailing padding (_ [N]byte) so that its size is a multiple of 64 again.
func TestHotStructsFillCacheLines(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the padding is sized for 64-bit platforms")
	}
	for _, c := range []struct {
		name string
		size uintptr
	}{
		{"batch", unsafe.Sizeof(batch{})},
		{"outStream", unsafe.Sizeof(outStream{})},
		{"outbox", unsafe.Sizeof(outbox{})},
		{"boltExec", unsafe.Sizeof(boltExec{})},
		{"boltTask", unsafe.Sizeof(boltTask{})},
		{"spoutTask", unsafe.Sizeof(spoutTask{})},
		{"tupleRecycler", unsafe.Sizeof(tupleRecycler{})},
		{"pendingMap", unsafe.Sizeof(pendingMap{})},
		{"router", unsafe.Sizeof(router{})},
		{"Tuple", unsafe.Sizeof(Tuple{})},
		{"ackBatch", unsafe.Sizeof(ackBatch{})},
		{"execSlot", unsafe.Sizeof(execSlot{})},
		{"emitter", unsafe.Sizeof(emitter{})},
		{"streamInfo", unsafe.Sizeof(streamInfo{})},
		{"BoltCollector", unsafe.Sizeof(BoltCollector{})},
		{"SpoutCollector", unsafe.Sizeof(SpoutCollector{})},
	} {
		if c.size%64 != 0 {
			t.Errorf("%s is %d bytes, not a multiple of 64: pad it by %d", c.name, c.size, 64-c.size%64)
		}
	}
}
