// Package codec is the wire codec for tuple values that worker processes
// exchange over TCP. It encodes a tuple's value list compactly (one tag byte
// per value, no field names) and decodes it back to the same Go types.
//
// Built-in values are nil, bool, int, int8, int16, int32, int64, uint,
// uint8, uint16, uint32, uint64, uintptr, float32, float64, string, []byte,
// time.Time, []any and map[string]any (the last two recursively, up to
// MaxDepth levels). Any other type must be registered in a Registry with a
// TypeCodec, the role Kryo registration plays in Storm; encoding an
// unregistered type returns an *UnsupportedTypeError that callers wrap with
// the component and stream that emitted it.
//
// # What the caller must do
//
// Every worker of a topology must register the same user types in the same
// order: a user type travels as a small integer id assigned in registration
// order, not as its name. The registration list is part of the topology
// definition, so building the topology in each worker yields identical
// registries. Register all types before the first Append or Decode call.
//
// # Encoding
//
// A value list is a uvarint count followed by the values. Each value is one
// tag byte followed by its payload:
//
//	tag   value             payload
//	0x00  nil               -
//	0x01  false             -
//	0x02  true              -
//	0x03  int               zigzag varint
//	0x04  int8              zigzag varint
//	0x05  int16             zigzag varint
//	0x06  int32             zigzag varint
//	0x07  int64             zigzag varint
//	0x08  uint              uvarint
//	0x09  uint8             uvarint
//	0x0a  uint16            uvarint
//	0x0b  uint32            uvarint
//	0x0c  uint64            uvarint
//	0x0d  uintptr           uvarint
//	0x0e  float32           4 bytes, IEEE 754 bits, little endian
//	0x0f  float64           8 bytes, IEEE 754 bits, little endian
//	0x10  string            uvarint length, bytes
//	0x11  []byte            uvarint length, bytes
//	0x12  []byte(nil)       -
//	0x13  time.Time         zigzag varint Unix seconds, uvarint nanoseconds,
//	                        zigzag varint zone offset seconds,
//	                        uvarint zone name length, zone name
//	0x14  []any             uvarint count, values
//	0x15  []any(nil)        -
//	0x16  map[string]any    uvarint count, then per entry: uvarint key
//	                        length, key, value; keys in increasing order
//	0x17  map[string]any(nil) -
//	0x18  registered type   uvarint id, uvarint length, TypeCodec payload
//
// Decoding preserves the exact Go type (an int8 comes back as an int8) and
// distinguishes nil from empty []byte, []any and map[string]any, so decoded
// values are reflect.DeepEqual to the encoded ones, with two exceptions:
// NaN floats come back with the same bits (NaN != NaN), and a time.Time comes
// back as the same instant (time.Time.Equal) with the same zone name and
// offset, in time.UTC when that was its zone and otherwise in a
// time.FixedZone; its monotonic clock reading and the daylight-saving rules
// of a named location such as time.Local are not carried.
//
// Map keys are written in sorted order, so equal maps encode to equal bytes.
// The decoder is lenient where leniency is harmless: it accepts map keys in
// any order and varints with redundant continuation bytes. It rejects
// duplicate map keys and integers out of range for their type.
//
// Decoding never panics on malformed input (unless a user TypeCodec does)
// and allocates memory in proportion to the input length only. Decoded
// strings and byte slices are copies: the input buffer may be reused.
package codec
