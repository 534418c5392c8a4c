// Package fieldhash hashes tuple values for the fields grouping. The hash
// must be the same in every worker process, on every machine and across
// restarts, so it is a fixed function of a canonical byte form of each
// value (little-endian 8-byte words mixed by multiply-xorshift), never a
// seeded map hash.
package fieldhash

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Seed is the starting value of a hash; combine values with Add.
const Seed uint64 = 14695981039346656037

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

const mulK = 0x9e3779b97f4a7c15

func mix(h, v uint64) uint64 {
	h = (h ^ v) * mulK
	return h ^ h>>29
}

func addString(h uint64, tag byte, s string) uint64 {
	h = mix(h, uint64(tag)<<56|uint64(len(s)))
	for len(s) > 8 {
		h = mix(h, le64(s))
		s = s[8:]
	}
	// The last 1..8 bytes: two overlapping 4-byte loads (or single bytes
	// for a short tail), as wyhash does, instead of a byte loop.
	switch n := len(s); {
	case n >= 4:
		return mix(h, uint64(le32(s))|uint64(le32(s[n-4:]))<<32)
	case n > 0:
		return mix(h, uint64(s[0])|uint64(s[n/2])<<8|uint64(s[n-1])<<16)
	}
	return h
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func addUint(h uint64, tag byte, v uint64) uint64 {
	return mix(mix(h, uint64(tag)<<56), v)
}

// Bucket maps a hash onto [0, n): the hash is finalised, then scaled by a
// multiply-high (no division).
func Bucket(h uint64, n int) int {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	hi, _ := bits.Mul64(h, uint64(n))
	return int(hi)
}

// Second derives from h a second hash of the same values, independent of
// Bucket(h, n): the partial key grouping's second candidate task is
// Bucket(Second(h), n).
func Second(h uint64) uint64 { return mix(h, 0xc4ceb9fe1a85ec53) }

// String is Add(Seed, s) for a string, without the type switch.
func String(s string) uint64 { return addString(Seed, 's', s) }
