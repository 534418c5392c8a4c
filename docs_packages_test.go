package gale_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureListsEveryPackage: docs/architecture.md's package table
// is where a newcomer finds the code, so every package of the module has
// a row there (a row may name several, and `examples/` covers the
// examples), and the table names no package that is gone.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	name := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			listed[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	var pkgs []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !ignored(path) {
			dir := filepath.ToSlash(filepath.Dir(path))
			if dir == "." {
				dir = "gale"
			}
			if !slices.Contains(pkgs, dir) {
				pkgs = append(pkgs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, p := range pkgs {
		if !listed[p] && !(strings.HasPrefix(p, "examples/") && listed["examples"]) {
			missing = append(missing, p)
		}
	}
	var gone []string
	for l := range listed {
		if l != "examples" && !slices.Contains(pkgs, l) {
			gone = append(gone, l)
		}
	}
	slices.Sort(gone)
	if len(missing) > 0 || len(gone) > 0 {
		t.Errorf("docs/architecture.md's package table is out of date: add a row for %q; remove or fix %q", missing, gone)
	}
}

// ignored reports whether the Go file at path is built only by go run
// (a "//go:build ignore" script), so its directory is no package.
func ignored(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.HasPrefix(string(b), "//go:build ignore")
}
