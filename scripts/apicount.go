//go:build ignore

// apicount counts the exported API of a Go package directory, its
// non-test files: top-level names (funcs, types, consts, vars), methods
// on exported types, and fields of exported struct types (embedded ones
// included). With a second argument it lists them too.
//
//	go run scripts/apicount.go .        # the root package
//	go run scripts/apicount.go . list
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

func main() {
	dir := os.Args[1]
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		panic(err)
	}
	var top, methods, fields int
	var names []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						top++
						names = append(names, d.Name.Name)
						continue
					}
					t := d.Recv.List[0].Type
					if s, ok := t.(*ast.StarExpr); ok {
						t = s.X
					}
					if id, ok := t.(*ast.Ident); ok && id.IsExported() {
						methods++
						names = append(names, id.Name+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							top++
							names = append(names, s.Name.Name)
							if st, ok := s.Type.(*ast.StructType); ok {
								for _, fl := range st.Fields.List {
									for _, n := range fl.Names {
										if n.IsExported() {
											fields++
											names = append(names, s.Name.Name+"."+n.Name)
										}
									}
									if len(fl.Names) == 0 { // embedded
										t := fl.Type
										if se, ok := t.(*ast.StarExpr); ok {
											t = se.X
										}
										if id, ok := t.(*ast.Ident); ok && id.IsExported() {
											fields++
											names = append(names, s.Name.Name+"."+id.Name)
										}
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									top++
									names = append(names, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	if len(os.Args) > 2 {
		for _, n := range names {
			fmt.Println(n)
		}
	}
	fmt.Printf("top-level %d, methods %d, fields %d, total %d\n", top, methods, fields, top+methods+fields)
}
