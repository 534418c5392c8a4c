package gale_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gale-stream/gale/internal/config"
)

// stringConsts returns the string constants of the package in dir, outside
// its tests, whose names start with one of prefixes, by name.
func stringConsts(t *testing.T, dir string, prefixes ...string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i >= len(vs.Values) || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n.Name, p) }) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						out[n.Name] = v
					}
				}
			}
		}
	}
	return out
}

// TestTopologyKeysAreTheRegistrys: the keys a topology sets are named for
// its authors here, with their documentation, and registered in
// internal/config, which validates them. The two must name the same keys
// by the same names, and every topology.* key of the registry must have
// its constant here, or a topology author could not find it in go doc.
func TestTopologyKeysAreTheRegistrys(t *testing.T) {
	root := stringConsts(t, ".", "Topology", "PanicPolicy")
	internal := stringConsts(t, "internal/config", "Topology", "PanicPolicy")
	if len(root) < 20 {
		t.Fatalf("found %d key constants in the root package; is the test reading it?", len(root))
	}
	for _, name := range slices.Sorted(maps.Keys(internal)) {
		if got, ok := root[name]; !ok {
			t.Errorf("internal/config names %s = %q, the root package does not: add it to config_keys.go with its doc", name, internal[name])
		} else if got != internal[name] {
			t.Errorf("%s is %q in the root package, %q in internal/config", name, got, internal[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(root)) {
		if _, ok := internal[name]; !ok {
			t.Errorf("the root package names %s = %q, internal/config does not: register it there", name, root[name])
		}
	}
	e, err := config.Resolve(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]bool{}
	for _, v := range root {
		values[v] = true
	}
	for _, entry := range e.Entries() {
		topology := strings.HasPrefix(entry.Key, "topology.")
		if topology && !values[entry.Key] {
			t.Errorf("the registry's key %q has no constant in the root package", entry.Key)
		}
		if !topology && values[entry.Key] {
			t.Errorf("the root package names %q, a %s key; a topology may not set it, so it belongs in internal/config alone", entry.Key, entry.Scope)
		}
	}
}
