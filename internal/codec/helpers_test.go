package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"
)

// point is a user type registered in the tests' registry.
type point struct{ X, Y int32 }

// pointCodec encodes a point as two little-endian int32s.
type pointCodec struct{}

func (pointCodec) Append(dst []byte, v any) ([]byte, error) {
	p := v.(point)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(p.X))
	return binary.LittleEndian.AppendUint32(dst, uint32(p.Y)), nil
}

func (pointCodec) Decode(b []byte) (any, error) {
	if len(b) != 8 {
		return nil, fmt.Errorf("point: want 8 bytes, got %d", len(b))
	}
	return point{int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:]))}, nil
}

// label is a second user type, a named string, with a variable-length
// payload (long labels exercise the multi-byte payload length).
type label string

type labelCodec struct{}

func (labelCodec) Append(dst []byte, v any) ([]byte, error) {
	return append(dst, v.(label)...), nil
}

func (labelCodec) Decode(b []byte) (any, error) { return label(b), nil }

// opaque is a user type whose codec always fails to decode.
type opaque struct{ n int }

var errOpaque = errors.New("opaque: cannot decode")

type opaqueCodec struct{}

func (opaqueCodec) Append(dst []byte, v any) ([]byte, error) { return append(dst, 1), nil }
func (opaqueCodec) Decode(b []byte) (any, error)             { return nil, errOpaque }

// testRegistry returns a registry with point (id 0) and label (id 1).
func testRegistry() *Registry {
	r := NewRegistry()
	if err := r.Register(reflect.TypeFor[point](), "test.point", pointCodec{}); err != nil {
		panic(err)
	}
	if err := r.Register(reflect.TypeFor[label](), "test.label", labelCodec{}); err != nil {
		panic(err)
	}
	return r
}

// equal reports whether decoded value b equals original value a under the
// codec's promise: same Go types, same nil-ness of slices and maps, floats
// with the same bits, times that are Equal with the same zone name and
// offset.
func equal(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch x := a.(type) {
	case float32:
		return math.Float32bits(x) == math.Float32bits(b.(float32))
	case float64:
		return math.Float64bits(x) == math.Float64bits(b.(float64))
	case time.Time:
		y := b.(time.Time)
		xn, xo := x.Zone()
		yn, yo := y.Zone()
		return x.Equal(y) && xn == yn && xo == yo
	case []byte:
		y := b.([]byte)
		return (x == nil) == (y == nil) && string(x) == string(y)
	case []any:
		y := b.([]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y := b.(map[string]any)
		if (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// equalLists reports whether two value lists hold equal values; unlike
// equal it treats a nil list and an empty one alike, as a tuple's value
// list has no nil state on the wire.
func equalLists(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
