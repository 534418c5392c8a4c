// Package fieldhash hashes tuple values for the fields grouping. The hash
// must be the same in every worker process and across restarts, so it is
// FNV-1a over a canonical byte form of each value, never a seeded map hash.
package fieldhash

import (
	"fmt"
	"math"
	"time"
)

const (
	offset64 = 14695981039346656037
	prime64  = 1099511628211
)

// Seed is the starting value of a hash; combine values with Add.
const Seed uint64 = offset64

// Add mixes v into h and returns the new hash. Equal values (by Go ==, and
// integers of different widths with the same value) give equal hashes.
func Add(h uint64, v any) uint64 {
	switch x := v.(type) {
	case string:
		return addString(h, 's', x)
	case []byte:
		return addString(h, 's', string(x))
	case int:
		return addUint(h, 'i', uint64(x))
	case int64:
		return addUint(h, 'i', uint64(x))
	case int32:
		return addUint(h, 'i', uint64(x))
	case int16:
		return addUint(h, 'i', uint64(x))
	case int8:
		return addUint(h, 'i', uint64(x))
	case uint:
		return addUint(h, 'i', uint64(x))
	case uint64:
		return addUint(h, 'i', x)
	case uint32:
		return addUint(h, 'i', uint64(x))
	case uint16:
		return addUint(h, 'i', uint64(x))
	case uint8:
		return addUint(h, 'i', uint64(x))
	case bool:
		if x {
			return addUint(h, 'b', 1)
		}
		return addUint(h, 'b', 0)
	case float64:
		return addUint(h, 'f', math.Float64bits(x))
	case float32:
		return addUint(h, 'f', math.Float64bits(float64(x)))
	case nil:
		return addUint(h, 'n', 0)
	case time.Time:
		return addUint(h, 't', uint64(x.UnixNano()))
	case fmt.Stringer:
		return addString(h, 'S', x.String())
	default:
		return addString(h, 'v', fmt.Sprintf("%#v", x))
	}
}

func addString(h uint64, tag byte, s string) uint64 {
	h ^= uint64(tag)
	h *= prime64
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime64
	}
	return h
}

func addUint(h uint64, tag byte, v uint64) uint64 {
	h ^= uint64(tag)
	h *= prime64
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= prime64
		v >>= 8
	}
	return h
}

// Bucket maps a hash onto [0, n) without the bias of a plain modulo of a
// weak low byte: the hash is finalised first.
func Bucket(h uint64, n int) int {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return int(h % uint64(n))
}
