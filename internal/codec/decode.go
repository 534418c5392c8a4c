package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
)

// DecodeValues decodes a value list written by AppendValues from the start
// of b, appends the values to dst and returns the extended slice and the
// number of bytes consumed. Pass dst[:0] to reuse a slice. On error it
// returns dst with its original length and a *DecodeError.
func (r *Registry) DecodeValues(b []byte, dst []any) ([]any, int, error) {
	return r.DecodeValuesInterned(b, dst, nil)
}

// DecodeValuesInterned is DecodeValues taking short strings from in (nil:
// none), so that a stream of the same words allocates nothing for them.
func (r *Registry) DecodeValuesInterned(b []byte, dst []any, in *Interner) ([]any, int, error) {
	d := decoder{r: r, b: b, in: in}
	start := len(dst)
	n, err := d.count(1)
	if err != nil {
		return dst, 0, err
	}
	dst = slices.Grow(dst, n)
	for range n {
		v, err := d.value(0)
		if err != nil {
			clear(dst[start:])
			return dst[:start], 0, err
		}
		dst = append(dst, v)
	}
	return dst, d.off, nil
}

// DecodeValue decodes one value written by AppendValue from the start of b
// and returns it and the number of bytes consumed. On error it returns a
// *DecodeError.
func (r *Registry) DecodeValue(b []byte) (any, int, error) {
	d := decoder{r: r, b: b}
	v, err := d.value(0)
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// decoder reads values from b, starting at off.
type decoder struct {
	r   *Registry
	b   []byte
	off int
	in  *Interner
}

// Interner keeps one boxed copy of each short string decoded through it,
// up to a bound after which it starts over. Strings are immutable, so
// handing the same one to many tuples is safe. An Interner belongs to one
// goroutine; the zero value is ready to use.
type Interner struct {
	m map[string]any
}

// Interning covers strings of up to internMaxLen bytes, internMax of them.
const (
	internMaxLen = 64
	internMax    = 4096
)

func (in *Interner) get(p []byte) any {
	if len(p) > internMaxLen {
		return string(p)
	}
	if v, ok := in.m[string(p)]; ok { // no allocation for the lookup
		return v
	}
	if in.m == nil {
		in.m = make(map[string]any)
	} else if len(in.m) >= internMax {
		clear(in.m)
	}
	s := string(p)
	var v any = s
	in.m[s] = v
	return v
}

func (d *decoder) errorf(off int, format string, args ...any) error {
	return &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) uvarint(what string) (uint64, error) {
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		if n == 0 {
			return 0, d.errorf(d.off, "truncated %s", what)
		}
		return 0, d.errorf(d.off, "%s varint overflows 64 bits", what)
	}
	d.off += n
	return x, nil
}

func (d *decoder) varint(what string) (int64, error) {
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		if n == 0 {
			return 0, d.errorf(d.off, "truncated %s", what)
		}
		return 0, d.errorf(d.off, "%s varint overflows 64 bits", what)
	}
	d.off += n
	return x, nil
}

// count reads an element count and checks that the remaining input can hold
// that many elements of at least minSize bytes each, so that a hostile
// count cannot make the decoder allocate more than the input justifies.
func (d *decoder) count(minSize int) (int, error) {
	off := d.off
	n, err := d.uvarint("count")
	if err != nil {
		return 0, err
	}
	if rest := uint64(len(d.b) - d.off); n > rest/uint64(minSize) {
		return 0, d.errorf(off, "count %d exceeds the %d bytes left", n, rest)
	}
	return int(n), nil
}

// bytes reads a length-prefixed byte string and returns it without copying.
func (d *decoder) bytes(what string) ([]byte, error) {
	off := d.off
	n, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 {
		if k == 0 {
			return nil, d.errorf(off, "truncated %s length", what)
		}
		return nil, d.errorf(off, "%s length varint overflows 64 bits", what)
	}
	d.off += k
	if rest := uint64(len(d.b) - d.off); n > rest {
		return nil, d.errorf(off, "%s length %d exceeds the %d bytes left", what, n, rest)
	}
	p := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p, nil
}

func (d *decoder) signed(what string, min, max int64) (int64, error) {
	off := d.off
	x, err := d.varint(what)
	if err != nil {
		return 0, err
	}
	if x < min || x > max {
		return 0, d.errorf(off, "%s value %d out of range", what, x)
	}
	return x, nil
}

func (d *decoder) unsigned(what string, max uint64) (uint64, error) {
	off := d.off
	x, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if x > max {
		return 0, d.errorf(off, "%s value %d out of range", what, x)
	}
	return x, nil
}

func (d *decoder) fixed(n int, what string) ([]byte, error) {
	if len(d.b)-d.off < n {
		return nil, d.errorf(d.off, "truncated %s: need %d bytes, have %d", what, n, len(d.b)-d.off)
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p, nil
}

// value decodes one value nested in depth lists or maps.
func (d *decoder) value(depth int) (any, error) {
	if d.off >= len(d.b) {
		return nil, d.errorf(d.off, "truncated input: want a value tag")
	}
	tagOff := d.off
	tag := d.b[d.off]
	d.off++
	switch tag {
	case tagNil:
		return nil, nil
	case tagFalse:
		return false, nil
	case tagTrue:
		return true, nil
	case tagInt:
		x, err := d.signed("int", math.MinInt, math.MaxInt)
		return int(x), err
	case tagInt8:
		x, err := d.signed("int8", math.MinInt8, math.MaxInt8)
		return int8(x), err
	case tagInt16:
		x, err := d.signed("int16", math.MinInt16, math.MaxInt16)
		return int16(x), err
	case tagInt32:
		x, err := d.signed("int32", math.MinInt32, math.MaxInt32)
		return int32(x), err
	case tagInt64:
		return d.varint("int64")
	case tagUint:
		x, err := d.unsigned("uint", math.MaxUint)
		return uint(x), err
	case tagUint8:
		x, err := d.unsigned("uint8", math.MaxUint8)
		return uint8(x), err
	case tagUint16:
		x, err := d.unsigned("uint16", math.MaxUint16)
		return uint16(x), err
	case tagUint32:
		x, err := d.unsigned("uint32", math.MaxUint32)
		return uint32(x), err
	case tagUint64:
		return d.uvarint("uint64")
	case tagUintptr:
		x, err := d.unsigned("uintptr", uint64(^uintptr(0)))
		return uintptr(x), err
	case tagFloat32:
		p, err := d.fixed(4, "float32")
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(p)), nil
	case tagFloat64:
		p, err := d.fixed(8, "float64")
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(p)), nil
	case tagString:
		p, err := d.bytes("string")
		if err != nil {
			return nil, err
		}
		if d.in != nil {
			return d.in.get(p), nil
		}
		return string(p), nil
	case tagBytes:
		p, err := d.bytes("[]byte")
		if err != nil {
			return nil, err
		}
		return append(make([]byte, 0, len(p)), p...), nil
	case tagNilBytes:
		return []byte(nil), nil
	case tagTime:
		return d.time()
	case tagList:
		return d.list(tagOff, depth)
	case tagNilList:
		return []any(nil), nil
	case tagMap:
		return d.dict(tagOff, depth)
	case tagNilMap:
		return map[string]any(nil), nil
	case tagUser:
		return d.user(tagOff)
	}
	return nil, d.errorf(tagOff, "unknown tag %#02x", tag)
}

func (d *decoder) time() (any, error) {
	sec, err := d.varint("time seconds")
	if err != nil {
		return nil, err
	}
	nsec, err := d.unsigned("time nanoseconds", 999_999_999)
	if err != nil {
		return nil, err
	}
	offset, err := d.signed("time zone offset", math.MinInt32, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	name, err := d.bytes("time zone name")
	if err != nil {
		return nil, err
	}
	t := time.Unix(sec, int64(nsec))
	if offset == 0 && string(name) == "UTC" {
		return t.UTC(), nil
	}
	return t.In(time.FixedZone(string(name), int(offset))), nil
}

func (d *decoder) list(tagOff, depth int) (any, error) {
	if depth >= MaxDepth {
		return nil, d.errorf(tagOff, "[]any nested deeper than %d levels", MaxDepth)
	}
	n, err := d.count(1) // a value is at least its tag
	if err != nil {
		return nil, err
	}
	l := make([]any, n)
	for i := range l {
		if l[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (d *decoder) dict(tagOff, depth int) (any, error) {
	if depth >= MaxDepth {
		return nil, d.errorf(tagOff, "map[string]any nested deeper than %d levels", MaxDepth)
	}
	n, err := d.count(2) // an entry is at least a key length and a tag
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		keyOff := d.off
		k, err := d.bytes("map key")
		if err != nil {
			return nil, err
		}
		if _, dup := m[string(k)]; dup {
			return nil, d.errorf(keyOff, "duplicate map key %q", k)
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[string(k)] = v
	}
	return m, nil
}

func (d *decoder) user(tagOff int) (any, error) {
	idOff := d.off
	id, err := d.uvarint("user type id")
	if err != nil {
		return nil, err
	}
	if id >= uint64(len(d.r.types)) {
		return nil, d.errorf(idOff, "user type id %d is not registered (%d types registered): do all workers register the same types in the same order?", id, len(d.r.types))
	}
	ut := &d.r.types[id]
	p, err := d.bytes(ut.name)
	if err != nil {
		return nil, err
	}
	v, err := ut.codec.Decode(p)
	if err != nil {
		return nil, &DecodeError{Offset: tagOff, Msg: fmt.Sprintf("decode %s (%v)", ut.name, ut.typ), Err: err}
	}
	if got := reflect.TypeOf(v); got != ut.typ {
		return nil, d.errorf(tagOff, "TypeCodec for %s (%v) decoded a %v", ut.name, ut.typ, got)
	}
	return v, nil
}
