package codec

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"reflect"
	"slices"
	"time"
)

// TypeCodec encodes and decodes the values of one user type.
//
// Append appends the encoding of v, which always has the registered type, to
// dst and returns the extended slice; it must not modify dst[:len(dst)].
// Decode receives exactly the bytes Append wrote and returns a value of the
// registered type. Decode must not retain b (copy what it keeps), and since
// b may come from a faulty or hostile peer, it must return an error rather
// than panic on bytes Append could not have written. Both methods must be
// safe for concurrent use.
type TypeCodec interface {
	Append(dst []byte, v any) ([]byte, error)
	Decode(b []byte) (any, error)
}

// Registry holds the user types a topology registered and encodes and
// decodes value lists containing them. The zero value is a registry with
// no user types, ready to use.
//
// Register must not be called concurrently with any other method. Once
// registration is done, all other methods are safe for concurrent use.
type Registry struct {
	ids   map[reflect.Type]uint64 // user type -> id, its index in types
	names map[string]reflect.Type
	types []userType
}

// userType is one registered type.
type userType struct {
	typ   reflect.Type
	name  string
	codec TypeCodec
}

// NewRegistry returns an empty registry. It is equivalent to new(Registry).
func NewRegistry() *Registry {
	return new(Registry)
}

// builtin lists the types the codec encodes itself; registering one is an
// error. Named types with the same underlying type (type Celsius float64)
// are not built-in and may be registered.
var builtin = map[reflect.Type]bool{
	reflect.TypeFor[bool]():           true,
	reflect.TypeFor[int]():            true,
	reflect.TypeFor[int8]():           true,
	reflect.TypeFor[int16]():          true,
	reflect.TypeFor[int32]():          true,
	reflect.TypeFor[int64]():          true,
	reflect.TypeFor[uint]():           true,
	reflect.TypeFor[uint8]():          true,
	reflect.TypeFor[uint16]():         true,
	reflect.TypeFor[uint32]():         true,
	reflect.TypeFor[uint64]():         true,
	reflect.TypeFor[uintptr]():        true,
	reflect.TypeFor[float32]():        true,
	reflect.TypeFor[float64]():        true,
	reflect.TypeFor[string]():         true,
	reflect.TypeFor[[]byte]():         true,
	reflect.TypeFor[time.Time]():      true,
	reflect.TypeFor[[]any]():          true,
	reflect.TypeFor[map[string]any](): true,
}

// Register adds user type t, called name in error messages, encoded by c.
// Types get ids in registration order, so every worker must register the
// same types in the same order (see the package documentation).
//
// It returns an error if t is nil, an interface type or a built-in type, if
// name is empty, if c is nil, or if t or name is already registered.
func (r *Registry) Register(t reflect.Type, name string, c TypeCodec) error {
	switch {
	case t == nil:
		return errors.New("codec: cannot register a nil type: pass reflect.TypeFor[T]()")
	case t.Kind() == reflect.Interface:
		return fmt.Errorf("codec: cannot register interface type %v: register the concrete types that implement it", t)
	case builtin[t]:
		return fmt.Errorf("codec: type %v is built in and needs no registration", t)
	case name == "":
		return fmt.Errorf("codec: type %v registered with an empty name: give it a name unique in the topology", t)
	case c == nil:
		return fmt.Errorf("codec: type %v (%q) registered with a nil TypeCodec", t, name)
	}
	if id, ok := r.ids[t]; ok {
		return fmt.Errorf("codec: type %v is already registered as %q: register each type once", t, r.types[id].name)
	}
	if other, ok := r.names[name]; ok {
		return fmt.Errorf("codec: cannot register type %v as %q: the name is already registered for type %v", t, name, other)
	}
	if r.ids == nil {
		r.ids = make(map[reflect.Type]uint64)
		r.names = make(map[string]reflect.Type)
	}
	r.ids[t] = uint64(len(r.types))
	r.names[name] = t
	r.types = append(r.types, userType{typ: t, name: name, codec: c})
	return nil
}

// Clone returns a copy that later registrations in r do not change.
func (r *Registry) Clone() *Registry {
	c := &Registry{types: slices.Clone(r.types)}
	if r.ids != nil {
		c.ids = maps.Clone(r.ids)
		c.names = maps.Clone(r.names)
	}
	return c
}

// Len returns the number of registered user types.
func (r *Registry) Len() int {
	return len(r.types)
}

// Fingerprint summarises the registration list: the names and Go types of
// the user types, in order. Workers compare fingerprints when they connect
// (transport.Hello.Types), because two registries that assign an id to
// different types would decode each other's values as the wrong types.
// The empty registry's fingerprint is FNV-1a's offset basis.
func (r *Registry) Fingerprint() uint64 {
	h := fnv.New64a()
	for _, ut := range r.types {
		// Length-prefixed, so that no two lists give the same bytes.
		fmt.Fprintf(h, "%d:%s%d:%s", len(ut.name), ut.name, len(ut.typ.String()), ut.typ.String())
	}
	return h.Sum64()
}

// MaxDepth is how deeply []any and map[string]any values may nest. A
// top-level []any holding scalars has depth 1.
const MaxDepth = 64

// ErrTooDeep is returned when encoding a value whose []any and
// map[string]any nest deeper than MaxDepth, which includes any value that
// contains itself.
var ErrTooDeep = fmt.Errorf("codec: value nests []any and map[string]any deeper than %d levels: flatten it or register a type for it", MaxDepth)

// ErrMalformed is matched (with errors.Is) by every *DecodeError.
var ErrMalformed = errors.New("codec: malformed input")

// UnsupportedTypeError is returned when encoding a value whose type is
// neither built in nor registered. Callers add the component and stream.
type UnsupportedTypeError struct {
	Type reflect.Type
}

// Error implements error.
func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("codec: type %v is not registered: register it with the topology (TopologyBuilder.RegisterType)", e.Type)
}

// DecodeError describes malformed input: what was wrong and at which byte
// offset of the decoded buffer. It matches ErrMalformed with errors.Is and
// unwraps to Err, the error of a user TypeCodec's Decode, if any.
type DecodeError struct {
	Offset int    // offset in the input of the value or field at fault
	Msg    string // what was wrong
	Err    error  // the underlying error, or nil
}

// Error implements error.
func (e *DecodeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("codec: malformed input at offset %d: %s: %v", e.Offset, e.Msg, e.Err)
	}
	return fmt.Sprintf("codec: malformed input at offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns the underlying error, or nil.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMalformed.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }
