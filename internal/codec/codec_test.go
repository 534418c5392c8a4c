package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 30, 5, 29, 47, 123456789, time.UTC)
	nested := []any{int8(1), []any{"a", map[string]any{"k": []any{nil}}}}
	tests := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"false", false},
		{"true", true},
		{"int zero", 0},
		{"int min", math.MinInt},
		{"int max", math.MaxInt},
		{"int8 min", int8(math.MinInt8)},
		{"int8 max", int8(math.MaxInt8)},
		{"int16 min", int16(math.MinInt16)},
		{"int16 max", int16(math.MaxInt16)},
		{"int32 min", int32(math.MinInt32)},
		{"int32 max", int32(math.MaxInt32)},
		{"int64 min", int64(math.MinInt64)},
		{"int64 max", int64(math.MaxInt64)},
		{"int64 -1", int64(-1)},
		{"uint max", uint(math.MaxUint)},
		{"uint8 max", uint8(math.MaxUint8)},
		{"uint16 max", uint16(math.MaxUint16)},
		{"uint32 max", uint32(math.MaxUint32)},
		{"uint64 max", uint64(math.MaxUint64)},
		{"uint64 zero", uint64(0)},
		{"uintptr max", ^uintptr(0)},
		{"float32", float32(1.5)},
		{"float32 NaN", float32(math.NaN())},
		{"float32 -Inf", float32(math.Inf(-1))},
		{"float32 -0", float32(math.Copysign(0, -1))},
		{"float32 smallest", float32(math.SmallestNonzeroFloat32)},
		{"float64", 3.14159},
		{"float64 NaN", math.NaN()},
		{"float64 NaN payload", math.Float64frombits(0x7ff8_0000_dead_beef)},
		{"float64 +Inf", math.Inf(1)},
		{"float64 -0", math.Copysign(0, -1)},
		{"float64 max", math.MaxFloat64},
		{"string", "gale"},
		{"string empty", ""},
		{"string invalid utf8", "\xff\xfe"},
		{"string long", strings.Repeat("x", 300)},
		{"bytes", []byte{0, 1, 2}},
		{"bytes empty", []byte{}},
		{"bytes nil", []byte(nil)},
		{"time utc", ts},
		{"time zero", time.Time{}},
		{"time fixed zone", ts.In(time.FixedZone("CET", 3600))},
		{"time negative offset", ts.In(time.FixedZone("", -(9*3600 + 30*60)))},
		{"time before 1970", time.Date(1600, 1, 1, 0, 0, 0, 1, time.UTC)},
		{"time with monotonic", time.Now()},
		{"list", []any{1, "a", true}},
		{"list empty", []any{}},
		{"list nil", []any(nil)},
		{"map", map[string]any{"b": 2, "a": 1.0, "": nil}},
		{"map empty", map[string]any{}},
		{"map nil", map[string]any(nil)},
		{"nested", nested},
		{"user type", point{-3, 7}},
		{"user type in list", []any{point{1, 2}, label("x")}},
		{"user type long payload", label(strings.Repeat("y", 1000))},
		{"user type empty payload", label("")},
	}
	r := testRegistry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := r.AppendValue(nil, tc.v)
			if err != nil {
				t.Fatalf("AppendValue(%#v): %v", tc.v, err)
			}
			got, n, err := r.DecodeValue(b)
			if err != nil {
				t.Fatalf("DecodeValue(% x): %v", b, err)
			}
			if n != len(b) {
				t.Errorf("DecodeValue consumed %d bytes, want %d", n, len(b))
			}
			if !equal(tc.v, got) {
				t.Errorf("round trip of %#v gave %#v", tc.v, got)
			}
		})
	}
}

// TestBytesNilVersusEmpty pins down that nil and empty slices and maps are
// distinguished: a bolt that tests v == nil sees what the spout emitted.
func TestBytesNilVersusEmpty(t *testing.T) {
	var r Registry // the zero value is usable
	b, err := r.AppendValues(nil, []any{[]byte(nil), []byte{}, []any(nil), []any{}, map[string]any(nil), map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := r.DecodeValues(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantNil := []bool{true, false, true, false, true, false}
	for i, v := range vals {
		if got := reflect.ValueOf(v).IsNil(); got != wantNil[i] {
			t.Errorf("value %d (%T): IsNil = %v, want %v", i, v, got, wantNil[i])
		}
	}
}

func TestTimeZones(t *testing.T) {
	ts := time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC)
	r := NewRegistry()
	for _, tc := range []struct {
		name    string
		in      time.Time
		wantLoc *time.Location // nil: any location with the same zone
	}{
		{"UTC decodes to time.UTC", ts, time.UTC},
		{"zero time decodes to time.UTC", time.Time{}, time.UTC},
		{"fixed zone", ts.In(time.FixedZone("IST", 19800)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := r.AppendValue(nil, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			v, _, err := r.DecodeValue(b)
			if err != nil {
				t.Fatal(err)
			}
			got := v.(time.Time)
			if !got.Equal(tc.in) {
				t.Errorf("got %v, want %v", got, tc.in)
			}
			gn, go_ := got.Zone()
			wn, wo := tc.in.Zone()
			if gn != wn || go_ != wo {
				t.Errorf("zone: got %s%+d, want %s%+d", gn, go_, wn, wo)
			}
			if tc.wantLoc != nil && got.Location() != tc.wantLoc {
				t.Errorf("location: got %v, want %v", got.Location(), tc.wantLoc)
			}
			if tc.in.IsZero() != got.IsZero() {
				t.Errorf("IsZero: got %v, want %v", got.IsZero(), tc.in.IsZero())
			}
		})
	}
}

func TestAppendValuesAppends(t *testing.T) {
	r := testRegistry()
	vals := []any{"word", int64(-5), point{1, 2}, nil}
	prefix := []byte("hdr")
	b, err := r.AppendValues(prefix, vals)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("AppendValues overwrote the prefix: % x", b)
	}
	// A trailing value must not be consumed.
	b = append(b, 0xee)
	got, n, err := r.DecodeValues(b[len(prefix):], make([]any, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(b) - len(prefix) - 1; n != want {
		t.Errorf("consumed %d bytes, want %d", n, want)
	}
	if !equalLists(vals, got) {
		t.Errorf("got %#v, want %#v", got, vals)
	}
}

func TestMapEncodingIsDeterministic(t *testing.T) {
	r := NewRegistry()
	keys := []string{"zeta", "alpha", "mu", "", "beta", "a", "ab", "b", "omega", "pi", "rho"}
	want := []byte(nil)
	for i := range 20 {
		m := map[string]any{}
		// Insert in a different order each time; map iteration order is
		// random anyway.
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			m[k] = map[string]any{k: len(k), "x": []any{k}}
		}
		b, err := r.AppendValue(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = b
		} else if !bytes.Equal(b, want) {
			t.Fatalf("encoding %d differs:\n got % x\nwant % x", i, b, want)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	type geoPoint struct{ Lat, Lon float64 }
	deep := []any{}
	for range MaxDepth {
		deep = []any{deep}
	}
	deepMap := map[string]any{}
	for range MaxDepth {
		deepMap = map[string]any{"m": deepMap}
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic
	r := testRegistry()
	if err := r.Register(reflect.TypeFor[opaque](), "test.opaque", failingAppend{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		v       any
		wantErr string
		wantIs  error
	}{
		{"unregistered struct", geoPoint{}, "codec: type codec.geoPoint is not registered: register it with the topology", nil},
		{"unregistered named int", time.Duration(5), "type time.Duration is not registered", nil},
		{"pointer to registered type", &point{}, "type *codec.point is not registered", nil},
		{"unregistered in list", []any{1, []any{struct{}{}}}, "type struct {} is not registered", nil},
		{"unregistered in map", map[string]any{"k": []string{"a"}}, "type []string is not registered", nil},
		{"too deep list", deep, "deeper than 64 levels", ErrTooDeep},
		{"too deep map", deepMap, "deeper than 64 levels", ErrTooDeep},
		{"cycle", cyclic, "deeper than 64 levels", ErrTooDeep},
		{"user codec fails", opaque{}, "codec: encode test.opaque (codec.opaque): opaque: no", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			b, err := r.AppendValues(dst, []any{"first", tc.v})
			if err == nil {
				t.Fatalf("AppendValues(%#v) = % x, want an error", tc.v, b)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if string(b) != "keep" {
				t.Errorf("on error AppendValues returned %q, want the original dst %q", b, "keep")
			}
		})
	}
	// The typed error carries the type for callers to report.
	_, err := r.AppendValue(nil, geoPoint{})
	var ute *UnsupportedTypeError
	if !errors.As(err, &ute) || ute.Type != reflect.TypeFor[geoPoint]() {
		t.Errorf("AppendValue(geoPoint{}) error = %v, want *UnsupportedTypeError for geoPoint", err)
	}
}

// MaxDepth levels of nesting are allowed, one more is not.
func TestMaxDepthBoundary(t *testing.T) {
	r := NewRegistry()
	v := any(1)
	for range MaxDepth {
		v = []any{v}
	}
	b, err := r.AppendValue(nil, v)
	if err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	if _, _, err := r.DecodeValue(b); err != nil {
		t.Fatalf("decode %d levels: %v", MaxDepth, err)
	}
	if _, err := r.AppendValue(nil, []any{v}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("%d levels: got %v, want ErrTooDeep", MaxDepth+1, err)
	}
	// The decoder enforces the same limit on input it did not write.
	hostile := append(bytes.Repeat([]byte{tagList, 1}, MaxDepth+1), tagNil)
	if _, _, err := r.DecodeValue(hostile); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "deeper than 64") {
		t.Fatalf("decode %d levels: got %v, want a depth error", MaxDepth+1, err)
	}
}

type failingAppend struct{ opaqueCodec }

func (failingAppend) Append(dst []byte, v any) ([]byte, error) {
	return append(dst, "garbage"...), errors.New("opaque: no")
}

type shrinkingAppend struct{ opaqueCodec }

func (shrinkingAppend) Append(dst []byte, v any) ([]byte, error) { return dst[:0], nil }

func TestUserCodecShrinkingDst(t *testing.T) {
	var r Registry
	if err := r.Register(reflect.TypeFor[opaque](), "test.opaque", shrinkingAppend{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AppendValue([]byte("x"), opaque{}); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("got %v, want an error about the shortened slice", err)
	}
}

func TestRegisterErrors(t *testing.T) {
	type celsius float64
	tests := []struct {
		name    string
		typ     reflect.Type
		regName string
		codec   TypeCodec
		wantErr string
	}{
		{"nil type", nil, "x", pointCodec{}, "nil type"},
		{"interface type", reflect.TypeFor[error](), "x", pointCodec{}, "interface type error"},
		{"built-in int", reflect.TypeFor[int](), "x", pointCodec{}, "type int is built in"},
		{"built-in time", reflect.TypeFor[time.Time](), "x", pointCodec{}, "type time.Time is built in"},
		{"built-in map", reflect.TypeFor[map[string]any](), "x", pointCodec{}, "built in"},
		{"empty name", reflect.TypeFor[celsius](), "", pointCodec{}, "empty name"},
		{"nil codec", reflect.TypeFor[celsius](), "x", nil, "nil TypeCodec"},
		{"duplicate type", reflect.TypeFor[point](), "other", pointCodec{}, `type codec.point is already registered as "test.point"`},
		{"duplicate name", reflect.TypeFor[celsius](), "test.point", pointCodec{}, `"test.point": the name is already registered for type codec.point`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := testRegistry()
			err := r.Register(tc.typ, tc.regName, tc.codec)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Register: got %v, want an error containing %q", err, tc.wantErr)
			}
			if r.Len() != 2 {
				t.Errorf("a failed Register changed the registry: Len = %d, want 2", r.Len())
			}
		})
	}
	// A named type over a built-in one may be registered.
	r := testRegistry()
	if err := r.Register(reflect.TypeFor[celsius](), "test.celsius", opaqueCodec{}); err != nil {
		t.Fatalf("Register(celsius): %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	uv := func(x uint64) []byte { return binary.AppendUvarint(nil, x) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	overlong := bytes.Repeat([]byte{0xff}, 11)
	tests := []struct {
		name    string
		in      []byte // a single value, as DecodeValue reads it
		wantErr string
		wantOff int
	}{
		{"empty input", nil, "truncated input: want a value tag", 0},
		{"unknown tag", []byte{numTags}, "unknown tag 0x19", 0},
		{"unknown tag 0xff", []byte{0xff}, "unknown tag 0xff", 0},
		{"truncated varint", []byte{tagInt64, 0x80}, "truncated int64", 1},
		{"overlong varint", cat([]byte{tagUint64}, overlong), "uint64 varint overflows 64 bits", 1},
		{"int8 out of range", cat([]byte{tagInt8}, binary.AppendVarint(nil, 128)), "int8 value 128 out of range", 1},
		{"uint16 out of range", cat([]byte{tagUint16}, uv(1<<16)), "uint16 value 65536 out of range", 1},
		{"truncated float32", []byte{tagFloat32, 1, 2, 3}, "truncated float32: need 4 bytes, have 3", 1},
		{"truncated float64", []byte{tagFloat64}, "truncated float64", 1},
		{"truncated string length", []byte{tagString}, "truncated string length", 1},
		{"overlong bytes length", cat([]byte{tagBytes}, overlong), "[]byte length varint overflows 64 bits", 1},
		{"string length past end", cat([]byte{tagString}, uv(5), []byte("abc")), "string length 5 exceeds the 3 bytes left", 1},
		{"huge string length", cat([]byte{tagString}, uv(math.MaxUint64)), "string length 18446744073709551615 exceeds", 1},
		{"bytes length past end", cat([]byte{tagBytes}, uv(1<<40)), "[]byte length 1099511627776 exceeds the 0 bytes left", 1},
		{"list count past end", cat([]byte{tagList}, uv(1<<62)), "count 4611686018427387904 exceeds the 0 bytes left", 1},
		{"list count > elements", cat([]byte{tagList}, uv(3), []byte{tagNil, tagNil}), "count 3 exceeds the 2 bytes left", 1},
		{"list truncated element", cat([]byte{tagList}, uv(2), []byte{tagNil, tagInt}), "truncated int", 4},
		{"map count past end", cat([]byte{tagMap}, uv(2), []byte{0, tagNil}), "count 2 exceeds the 2 bytes left", 1},
		{"map key past end", cat([]byte{tagMap}, uv(1), uv(9), []byte{tagNil}), "map key length 9 exceeds", 2},
		{"map duplicate key", cat([]byte{tagMap}, uv(2), []byte{1, 'k', tagNil, 1, 'k', tagTrue}), `duplicate map key "k"`, 5},
		{"time nanoseconds out of range", cat([]byte{tagTime}, uv(0), uv(1e9)), "time nanoseconds value 1000000000 out of range", 2},
		{"time offset out of range", cat([]byte{tagTime}, uv(0), uv(0), binary.AppendVarint(nil, 1<<40)), "time zone offset value", 3},
		{"time truncated zone name", cat([]byte{tagTime}, uv(0), uv(0), uv(0), uv(3), []byte("UT")), "time zone name length 3 exceeds", 4},
		{"user id unregistered", cat([]byte{tagUser}, uv(7), uv(0)), "user type id 7 is not registered (2 types registered)", 1},
		{"user payload past end", cat([]byte{tagUser}, uv(0), uv(8), []byte{1, 2}), "test.point length 8 exceeds the 2 bytes left", 2},
		{"user codec decode fails", cat([]byte{tagUser}, uv(0), uv(3), []byte{1, 2, 3}), "decode test.point (codec.point): point: want 8 bytes, got 3", 0},
	}
	r := testRegistry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := r.DecodeValue(tc.in)
			if err == nil {
				t.Fatalf("DecodeValue(% x) = %#v, %d, want an error", tc.in, v, n)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v is not ErrMalformed", err)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
			if de.Offset != tc.wantOff {
				t.Errorf("offset: got %d, want %d (%v)", de.Offset, tc.wantOff, err)
			}
			// The same bytes inside a value list report offsets past the
			// count (empty input fails the count check instead).
			if len(tc.in) == 0 {
				return
			}
			in := append([]byte{1}, tc.in...)
			dst := []any{"kept"}
			got, n, err := r.DecodeValues(in, dst)
			if !errors.As(err, &de) || de.Offset != tc.wantOff+1 {
				t.Errorf("DecodeValues: got error %v, want one at offset %d", err, tc.wantOff+1)
			}
			if len(got) != 1 || got[0] != "kept" || n != 0 {
				t.Errorf("DecodeValues on error returned %#v, %d; want the original dst and 0", got, n)
			}
		})
	}
}

func TestDecodeUserCodecErrorUnwraps(t *testing.T) {
	var r Registry
	if err := r.Register(reflect.TypeFor[opaque](), "test.opaque", opaqueCodec{}); err != nil {
		t.Fatal(err)
	}
	b, err := r.AppendValues(nil, []any{opaque{}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.DecodeValues(b, nil)
	if !errors.Is(err, errOpaque) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want an error matching both errOpaque and ErrMalformed", err)
	}
}

type wrongTypeCodec struct{ pointCodec }

func (wrongTypeCodec) Decode(b []byte) (any, error) { return "not a point", nil }

func TestDecodeUserCodecWrongType(t *testing.T) {
	var r Registry
	if err := r.Register(reflect.TypeFor[point](), "test.point", wrongTypeCodec{}); err != nil {
		t.Fatal(err)
	}
	b, err := r.AppendValue(nil, point{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.DecodeValue(b); err == nil || !strings.Contains(err.Error(), "decoded a string") {
		t.Fatalf("got %v, want an error naming the wrong type", err)
	}
}

// Decoded strings and byte slices must not alias the input buffer, which
// the transport reuses for the next frame.
func TestDecodeCopies(t *testing.T) {
	r := NewRegistry()
	b, err := r.AppendValues(nil, []any{"hello", []byte("world"), map[string]any{"key": 1}})
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := r.DecodeValues(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 'X'
	}
	want := []any{"hello", []byte("world"), map[string]any{"key": 1}}
	if !equalLists(want, vals) {
		t.Fatalf("after overwriting the input, got %#v, want %#v", vals, want)
	}
}

func TestAppendAllocs(t *testing.T) {
	r := testRegistry()
	tests := []struct {
		name string
		vals []any
		want float64
	}{
		{"scalars", []any{"abcdefg", int64(1 << 40), 42, -7.5, float32(1), true, false, nil, uint8(3), []byte("xy")}, 0},
		{"time", []any{time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("X", 60))}, 0},
		{"list", []any{[]any{"a", 1}}, 0},
		{"small map", []any{map[string]any{"a": 1, "b": "c"}}, 0},
		{"user type", []any{point{1, 2}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]byte, 0, 256)
			got := testing.AllocsPerRun(100, func() {
				var err error
				if dst, err = r.AppendValues(dst[:0], tc.vals); err != nil {
					t.Fatal(err)
				}
			})
			if got > tc.want {
				t.Errorf("AppendValues(%#v): %v allocations per run, want %v", tc.vals, got, tc.want)
			}
		})
	}
}

// Registries agree on their fingerprint exactly when they registered the
// same types under the same names in the same order.
func TestFingerprint(t *testing.T) {
	reg := func(t *testing.T, entries ...any) *Registry {
		t.Helper()
		r := NewRegistry()
		for i := 0; i < len(entries); i += 2 {
			if err := r.Register(entries[i].(reflect.Type), entries[i+1].(string), opaqueCodec{}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	pt, lb := reflect.TypeFor[point](), reflect.TypeFor[label]()
	base := reg(t, pt, "geo.Point", lb, "label").Fingerprint()
	if got := reg(t, pt, "geo.Point", lb, "label").Fingerprint(); got != base {
		t.Errorf("same registrations: fingerprints %x and %x differ", got, base)
	}
	for name, r := range map[string]*Registry{
		"none":          NewRegistry(),
		"other order":   reg(t, lb, "label", pt, "geo.Point"),
		"other name":    reg(t, pt, "geo.Pt", lb, "label"),
		"one missing":   reg(t, pt, "geo.Point"),
		"names swapped": reg(t, pt, "label", lb, "geo.Point"),
	} {
		if r.Fingerprint() == base {
			t.Errorf("%s: same fingerprint %x as the original registrations", name, base)
		}
	}
}

// TestInterner: decoding through an Interner gives the same values, and
// once a word has been seen, decoding it again allocates nothing.
func TestInterner(t *testing.T) {
	r := NewRegistry()
	long := strings.Repeat("x", internMaxLen+1)
	in := []any{"alpha", 7, "beta", long}
	b, err := r.AppendValues(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	var it Interner
	got, _, err := r.DecodeValuesInterned(b, nil, &it)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("got %#v, want %#v", got, in)
	}
	short, err := r.AppendValues(nil, []any{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]any, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		dst, _, _ = r.DecodeValuesInterned(short, dst[:0], &it)
	})
	if allocs != 0 {
		t.Errorf("decoding interned words allocates %.0f times, want 0", allocs)
	}
	// Past the bound it starts over rather than growing.
	for i := range internMax + 10 {
		w, _ := r.AppendValues(nil, []any{fmt.Sprint("w", i)})
		if _, _, err := r.DecodeValuesInterned(w, nil, &it); err != nil {
			t.Fatal(err)
		}
	}
	if len(it.m) > internMax {
		t.Errorf("interner holds %d strings, over its bound %d", len(it.m), internMax)
	}
}
