package gale_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The public packages' whole exported API is checked in under api/, one
// file per package, one line per exported name, as Go's own api/ files
// are: a change to it, a new export above all, is a change a reviewer
// sees in the diff of api/*.txt.
var updateAPI = flag.Bool("update", false, "rewrite api/*.txt to the public packages' exported API (TestAPI)")

// apiUpdateCommand is how to accept a change of the API.
const apiUpdateCommand = "go test -run '^TestAPI$' . -update"

// publicPackages are the packages users import, by import path, with the
// file under api/ that holds each one's API.
var publicPackages = []struct{ path, golden string }{
	{"github.com/gale-stream/gale", "gale.txt"},
	{"github.com/gale-stream/gale/galetest", "galetest.txt"},
	{"github.com/gale-stream/gale/galecli", "galecli.txt"},
	{"github.com/gale-stream/gale/retry", "retry.txt"},
	{"github.com/gale-stream/gale/connectors/kafka", "connectors_kafka.txt"},
	{"github.com/gale-stream/gale/connectors/jetstream", "connectors_jetstream.txt"},
}

// TestAPI compares the exported API of each public package (every
// exported constant, variable, function, type, method, struct field and
// interface method, with its type) with its file under api/.
func TestAPI(t *testing.T) {
	pkgs := loadPublicPackages(t)
	for _, p := range publicPackages {
		got := apiText(pkgs[p.path])
		path := filepath.Join("api", p.golden)
		if *updateAPI {
			if err := os.MkdirAll("api", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v; to write it, run %s", p.path, err, apiUpdateCommand)
			continue
		}
		if added, removed := lineDiff(string(want), got); len(added)+len(removed) > 0 {
			t.Errorf("the exported API of %s differs from %s:\n%s%s\n"+
				"An export is a reviewed change: a name in the root package is for topology authors only (the machinery goes under internal/). "+
				"If the change is meant, accept it with\n\t%s\nand commit %s with the change.",
				p.path, path, prefixed("+ ", added), prefixed("- ", removed), apiUpdateCommand, path)
		}
	}
}

// machinery are the names, as api/gale.txt writes them, that serve nimbus,
// the supervisors, the workers, the command line or Gale's own tests, not
// topology authors: they live under internal/ (internal/config,
// internal/worker, internal/bridge), and TestAPIKeepsMachineryInternal
// keeps them there, -update or not.
var machinery = []string{
	// The worker-process layer and the test hooks (internal/worker,
	// internal/bridge).
	"func StartWorker", "type Worker ", "type Assignment ", "type WorkerOptions ", "type WorkerStatus ", "var ErrInvalidAssignment ",
	"type Observer ", "(*LocalTopology) WaitQuiet", "(*LocalTopology) TimeoutTick", "(*LocalTopology) TaskIDs",
	"(*Topology) ReplaceSpout", "type RunOptions struct, CheckTupleReuse", "type RunOptions struct, Observer",
	"type RunOptions struct, FileConfig",
	"WorkerMemory", "const GOGCOff", "TopologyWorkerGOGC", "TopologyWorkerGCFloorMB", "TopologyWorkerHeapPretouch", "WorkerHeapMemoryMB",
	// The configuration's layers and the cluster's keys (internal/config).
	"type Layer ", "const Layer", "type Scope ", "const Scope", "type ConfigEntry ", "func ResolveConfig", "func LoadConfigFile",
	"(Config) Validate", "(*Effective) Entries", "(*Effective) Source", "(*Effective) ForComponent", "(*Effective) WithTopologyName",
	"const Nimbus", "const Supervisor", "const Worker", "const GaleEtcd", "const UIPort", "const IsolationScheduler",
	// The topology definition's decoding for nimbus (no caller).
	"func ParseTopologyDef",
}

// TestAPIKeepsMachineryInternal: the root package is for topology
// authors; none of the machinery above is exported from it.
func TestAPIKeepsMachineryInternal(t *testing.T) {
	pkgs := loadPublicPackages(t)
	lines := strings.Split(apiText(pkgs["github.com/gale-stream/gale"]), "\n")
	if len(lines) < 100 {
		t.Fatalf("found only %d lines of API in the root package; is the test reading it?", len(lines))
	}
	for _, l := range lines {
		for _, m := range machinery {
			if strings.Contains(l, m) {
				t.Errorf("the root package exports %q; it serves the cluster or the tests, not topology authors: move it under internal/ (internal/config, internal/worker, internal/bridge)", l)
			}
		}
	}
}

// loadPublicPackages type-checks nothing itself: it reads the public
// packages' export data, which the go command builds (from its cache when
// the tests' build made it), as Go's own api check does.
func loadPublicPackages(t *testing.T) map[string]*types.Package {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export"}
	if raceBuild {
		args = append(args, "-race") // the same build as the tests', from the cache
	}
	for _, p := range publicPackages {
		args = append(args, p.path)
	}
	cmd := exec.Command(goCmd, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	pkgs := map[string]*types.Package{}
	for _, p := range publicPackages {
		pkg, err := imp.Import(p.path)
		if err != nil {
			t.Fatalf("importing %s: %v", p.path, err)
		}
		pkgs[p.path] = pkg
	}
	return pkgs
}

// apiText is the exported API of pkg, one sorted line per name: "const
// DefaultStream = \"default\"", "func RunLocal(...) error", "method
// (*Tuple) Len() int", "type RunOptions struct, Clock Clock", ...
func apiText(pkg *types.Package) string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		if i := strings.Index(p.Path(), "/internal/"); i >= 0 {
			return p.Path()[i+1:] // an internal type, visible as one
		}
		return p.Name()
	}
	str := func(t types.Type) string { return types.TypeString(t, qual) }
	// sig writes a signature without its parameters' names, which are
	// not API.
	sig := func(s *types.Signature) string {
		unnamed := func(t *types.Tuple) *types.Tuple {
			vars := make([]*types.Var, t.Len())
			for i := range vars {
				vars[i] = types.NewParam(token.NoPos, nil, "", t.At(i).Type())
			}
			return types.NewTuple(vars...)
		}
		var b bytes.Buffer
		types.WriteSignature(&b, types.NewSignatureType(nil, nil, nil, unnamed(s.Params()), unnamed(s.Results()), s.Variadic()), qual)
		return b.String()
	}
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	members := func(prefix string, u types.Type) {
		switch u := u.(type) {
		case *types.Struct:
			for i := range u.NumFields() {
				f := u.Field(i)
				if !f.Exported() {
					continue
				}
				if f.Embedded() {
					add("%s struct, embedded %s", prefix, str(f.Type()))
				} else {
					add("%s struct, %s %s", prefix, f.Name(), str(f.Type()))
				}
			}
		case *types.Interface:
			for i := range u.NumMethods() {
				if m := u.Method(i); m.Exported() {
					add("%s interface, %s%s", prefix, m.Name(), sig(m.Type().(*types.Signature)))
				}
			}
		}
	}
	methods := func(name string, n *types.Named) {
		for i := range n.NumMethods() {
			m := n.Method(i)
			if !m.Exported() {
				continue
			}
			s := m.Type().(*types.Signature)
			recv := name
			if _, ptr := s.Recv().Type().(*types.Pointer); ptr {
				recv = "*" + name
			}
			add("method (%s) %s%s", recv, m.Name(), sig(s))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			typ := ""
			if b, ok := o.Type().(*types.Basic); !ok || b.Info()&types.IsUntyped == 0 {
				typ = " " + str(o.Type())
			}
			add("const %s%s = %s", name, typ, constValue(o.Val()))
		case *types.Var:
			add("var %s %s", name, str(o.Type()))
		case *types.Func:
			add("func %s%s", name, sig(o.Type().(*types.Signature)))
		case *types.TypeName:
			if o.IsAlias() {
				target := types.Unalias(o.Type())
				add("type %s = %s", name, str(target))
				// An internal type reached through an alias shows nowhere
				// else: its members are API too.
				if n, ok := target.(*types.Named); ok && strings.Contains(n.Obj().Pkg().Path(), "/internal/") {
					members("type "+name, n.Underlying())
					methods(name, n)
				}
				continue
			}
			n := o.Type().(*types.Named)
			tparams := ""
			if tp := n.TypeParams(); tp.Len() > 0 {
				var ps []string
				for i := range tp.Len() {
					ps = append(ps, tp.At(i).Obj().Name()+" "+str(tp.At(i).Constraint()))
				}
				tparams = "[" + strings.Join(ps, ", ") + "]"
			}
			switch u := n.Underlying().(type) {
			case *types.Struct:
				add("type %s%s struct", name, tparams)
			case *types.Interface:
				var ms []string
				for i := range u.NumMethods() {
					if m := u.Method(i); m.Exported() {
						ms = append(ms, m.Name())
					} else {
						ms = append(ms, "unexported methods")
					}
				}
				add("type %s%s interface { %s }", name, tparams, strings.Join(slices.Compact(ms), ", "))
			default:
				add("type %s%s %s", name, tparams, str(u))
			}
			members("type "+name, n.Underlying())
			methods(name, n)
		}
	}
	slices.Sort(lines)
	return "# The exported API of " + pkg.Path() + ", checked by TestAPI (api_test.go).\n" +
		"# A change is a reviewed change; accept one with: " + apiUpdateCommand + "\n" +
		strings.Join(lines, "\n") + "\n"
}

// constValue writes a constant's value as Go source does.
func constValue(v constant.Value) string {
	if v.Kind() == constant.String {
		return v.ExactString() // quoted
	}
	return v.String()
}

// lineDiff returns the lines of got not in want and those of want not in
// got.
func lineDiff(want, got string) (added, removed []string) {
	w := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	g := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for _, l := range g {
		if !slices.Contains(w, l) {
			added = append(added, l)
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}

func prefixed(p string, lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(p + l + "\n")
	}
	return b.String()
}
