package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"
)

// Tags: the first byte of every encoded value. The package documentation
// has the table; the values are part of the wire format and must not change.
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagInt8
	tagInt16
	tagInt32
	tagInt64
	tagUint
	tagUint8
	tagUint16
	tagUint32
	tagUint64
	tagUintptr
	tagFloat32
	tagFloat64
	tagString
	tagBytes
	tagNilBytes
	tagTime
	tagList
	tagNilList
	tagMap
	tagNilMap
	tagUser
	numTags
)

// AppendValues appends the encoding of vals (a count, then each value) to
// dst and returns the extended slice. On error it returns dst with its
// original length, so the buffer can be reused.
func (r *Registry) AppendValues(dst []byte, vals []any) ([]byte, error) {
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for _, v := range vals {
		var err error
		if dst, err = r.appendValue(dst, v, 0); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// AppendValue appends the encoding of v to dst and returns the extended
// slice. On error it returns dst with its original length.
func (r *Registry) AppendValue(dst []byte, v any) ([]byte, error) {
	start := len(dst)
	dst, err := r.appendValue(dst, v, 0)
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// appendValue appends v, which is nested in depth lists or maps. The type
// switch covers the built-in types without reflection; only user types are
// looked up by reflect.TypeOf.
func (r *Registry) appendValue(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tagNil), nil
	case bool:
		if x {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case string:
		dst = append(dst, tagString)
		dst = binary.AppendUvarint(dst, uint64(len(x)))
		return append(dst, x...), nil
	case int:
		return binary.AppendVarint(append(dst, tagInt), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(dst, tagInt64), x), nil
	case int32:
		return binary.AppendVarint(append(dst, tagInt32), int64(x)), nil
	case int16:
		return binary.AppendVarint(append(dst, tagInt16), int64(x)), nil
	case int8:
		return binary.AppendVarint(append(dst, tagInt8), int64(x)), nil
	case uint:
		return binary.AppendUvarint(append(dst, tagUint), uint64(x)), nil
	case uint64:
		return binary.AppendUvarint(append(dst, tagUint64), x), nil
	case uint32:
		return binary.AppendUvarint(append(dst, tagUint32), uint64(x)), nil
	case uint16:
		return binary.AppendUvarint(append(dst, tagUint16), uint64(x)), nil
	case uint8:
		return binary.AppendUvarint(append(dst, tagUint8), uint64(x)), nil
	case uintptr:
		return binary.AppendUvarint(append(dst, tagUintptr), uint64(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(dst, tagFloat64), math.Float64bits(x)), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(dst, tagFloat32), math.Float32bits(x)), nil
	case []byte:
		if x == nil {
			return append(dst, tagNilBytes), nil
		}
		dst = append(dst, tagBytes)
		dst = binary.AppendUvarint(dst, uint64(len(x)))
		return append(dst, x...), nil
	case time.Time:
		return appendTime(dst, x), nil
	case []any:
		return r.appendList(dst, x, depth)
	case map[string]any:
		return r.appendMap(dst, x, depth)
	}
	return r.appendUser(dst, v)
}

func appendTime(dst []byte, t time.Time) []byte {
	name, offset := t.Zone()
	dst = append(dst, tagTime)
	dst = binary.AppendVarint(dst, t.Unix())
	dst = binary.AppendUvarint(dst, uint64(t.Nanosecond()))
	dst = binary.AppendVarint(dst, int64(offset))
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	return append(dst, name...)
}

func (r *Registry) appendList(dst []byte, l []any, depth int) ([]byte, error) {
	if l == nil {
		return append(dst, tagNilList), nil
	}
	if depth >= MaxDepth {
		return dst, ErrTooDeep
	}
	dst = append(dst, tagList)
	dst = binary.AppendUvarint(dst, uint64(len(l)))
	for _, v := range l {
		var err error
		if dst, err = r.appendValue(dst, v, depth+1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func (r *Registry) appendMap(dst []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(dst, tagNilMap), nil
	}
	if depth >= MaxDepth {
		return dst, ErrTooDeep
	}
	// Sort the keys so that equal maps encode to equal bytes. Small maps
	// sort in a stack buffer.
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, tagMap)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		var err error
		if dst, err = r.appendValue(dst, m[k], depth+1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// appendUser appends a registered user type: tag, id, payload length,
// payload. The payload is appended first and then shifted right to make
// room for its length, which is not known in advance.
func (r *Registry) appendUser(dst []byte, v any) ([]byte, error) {
	t := reflect.TypeOf(v)
	id, ok := r.ids[t]
	if !ok {
		return dst, &UnsupportedTypeError{Type: t}
	}
	ut := &r.types[id]
	dst = append(dst, tagUser)
	dst = binary.AppendUvarint(dst, id)
	start := len(dst)
	out, err := ut.codec.Append(dst, v)
	if err != nil {
		return dst, fmt.Errorf("codec: encode %s (%v): %w", ut.name, t, err)
	}
	if len(out) < start {
		return dst, fmt.Errorf("codec: encode %s (%v): TypeCodec.Append returned a slice shorter than the one it was given", ut.name, t)
	}
	n := len(out) - start
	var lenBuf [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(lenBuf[:], uint64(n))
	out = append(out, lenBuf[:k]...) // grow by k bytes
	copy(out[start+k:], out[start:start+n])
	copy(out[start:], lenBuf[:k])
	return out, nil
}
