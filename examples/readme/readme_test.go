package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsThisProgram: the README's Go code is this file, from its
// package clause on, so that what the README shows compiles and runs.
func TestREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\npackage main\n")
	if !ok {
		t.Fatal("the README has no ```go block starting with package main")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatal("the README's go block does not end")
	}
	_, prog, _ := strings.Cut(string(src), "package main\n")
	if block != prog {
		t.Errorf("the README's program differs from examples/readme/main.go; copy main.go (from its package clause) into the README\nREADME:\n%s\nmain.go:\n%s", block, prog)
	}
}

// TestBuild: the program's topology builds.
func TestBuild(t *testing.T) {
	topo, conf, err := build(nil)
	if err != nil || topo == nil || conf == nil {
		t.Fatalf("build: %v, %v, %v", topo, conf, err)
	}
}
