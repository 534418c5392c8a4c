package gale_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestRootPackageKeepsWorkerAndTestHooksInternal: the root package is
// for topology authors. The worker-process layer and the test hooks
// change with the supervisor and the tests, so they live under internal/
// (internal/worker, internal/bridge) and none of their names is exported
// here.
func TestRootPackageKeepsWorkerAndTestHooksInternal(t *testing.T) {
	internal := []string{
		"StartWorker", "Worker", "Assignment", "WorkerOptions", "WorkerStatus", "ErrInvalidAssignment",
		"Observer", "LocalTopology.WaitQuiet", "LocalTopology.TimeoutTick", "LocalTopology.TaskIDs",
		"Topology.ReplaceSpout", "RunOptions.CheckTupleReuse", "RunOptions.Observer",
		"WorkerMemory", "WorkerMemoryOf", "GOGCOff", "TopologyWorkerGOGC", "TopologyWorkerGCFloorMB",
		"TopologyWorkerHeapPretouch", "WorkerHeapMemoryMB",
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range pkgs["gale"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				name := d.Name.Name
				if d.Recv != nil {
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						name = id.Name + "." + name
					}
				}
				exported[name] = d.Name.IsExported()
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						exported[s.Name.Name] = s.Name.IsExported()
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									exported[s.Name.Name+"."+n.Name] = n.IsExported()
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							exported[n.Name] = n.IsExported()
						}
					}
				}
			}
		}
	}
	if len(exported) < 100 {
		t.Fatalf("found only %d declarations in the root package; is the test reading it?", len(exported))
	}
	for _, name := range internal {
		if exported[name] {
			t.Errorf("the root package exports %s; it belongs under internal/ (internal/worker, internal/bridge)", name)
		}
	}
}
