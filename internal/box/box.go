// Package box converts strings to interface values without one heap
// allocation per string.
//
// Converting a string to any copies its header (pointer and length) to
// the heap: one 16-byte allocation per conversion, the largest cost left
// in emitting a one-word tuple (word count's split bolt: 8 of them per
// sentence, a sixth of its CPU). Strings instead carves the headers out of
// a chunk of chunkLen (255), and builds each interface value to point at its
// slot, so the allocator runs once per chunk.
//
// The values are ordinary interface values: comparable, usable as map
// keys, type-switched and reflected on as any string in an interface.
// Each slot is written once, before its interface value exists, and never
// again. The cost is retention: the garbage collector frees a chunk only
// when no value made from it is reachable, so one value kept holds its
// chunk (4 KiB) and the strings of the chunk's other slots.
package box

import "unsafe"

// eface is the layout of an interface value with no methods (any): the
// type's descriptor and a pointer to the value.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// stringType is string's type descriptor, as an interface holding a
// string carries it.
var stringType = func() unsafe.Pointer {
	var a any = ""
	return (*eface)(unsafe.Pointer(&a)).typ
}()

// chunkLen is the number of string headers a chunk holds: 255 of 16 bytes
// and the 8-byte header the allocator puts before an object with pointers
// larger than 512 bytes fill its 4 KiB size class exactly (256 took the
// 4,864-byte class: 19 bytes a string instead of 16).
const chunkLen = 255

// Strings boxes strings into interface values. The zero value is ready to
// use. A Strings is not safe for concurrent use; give each goroutine its
// own.
type Strings struct {
	free []string // the current chunk's unused slots
}

// Box returns s as an interface value, as any(s) would.
func (b *Strings) Box(s string) any {
	if len(b.free) == 0 {
		b.free = make([]string, chunkLen)
	}
	p := &b.free[0]
	*p = s
	b.free = b.free[1:]
	var a any
	e := (*eface)(unsafe.Pointer(&a))
	e.typ, e.data = stringType, unsafe.Pointer(p)
	return a
}
