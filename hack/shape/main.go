// Command shape checks the shape of the source tree for make verify. Without flags it
// wants no function of non-test, non-generated code beyond 80 lines and no Go file
// beyond 500, generated files and the API's type files aside. With -deps it wants the
// package given to link none of the packages -forbid names.
//
// Usage:
//
//	shape
//	shape -deps ./cmd/tfk8s-dashboard -forbid cobra,internal/cli,localcluster
//
// It prints each offender as path:line: what, and exits 1 if there is any.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	deps := flag.String("deps", "", "check the dependencies of this package instead of sizes")
	forbid := flag.String("forbid", "", "with -deps: comma-separated path segments no dependency may contain")
	flag.Parse()
	var offenders []string
	var err error
	if *deps != "" {
		offenders, err = checkDeps(*deps, strings.Split(*forbid, ","))
	} else {
		offenders, err = checkTree()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape:", err)
		os.Exit(2)
	}
	for _, o := range offenders {
		fmt.Println(o)
	}
	if len(offenders) > 0 {
		os.Exit(1)
	}
}

// checkTree checks the size of every Go file git tracks or would track.
func checkTree() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the Go files: %w", err)
	}
	var offenders []string
	for _, path := range strings.Fields(string(out)) {
		src, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted, not yet staged
		}
		if err != nil {
			return nil, err
		}
		found, err := checkFile(path, src)
		if err != nil {
			return nil, err
		}
		offenders = append(offenders, found...)
	}
	return offenders, nil
}

// checkDeps lists the dependencies of pkg that forbidden names.
func checkDeps(pkg string, forbidden []string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w\n%s", pkg, err, stderr.String())
	}
	return forbiddenDeps(pkg, strings.Fields(string(out)), forbidden), nil
}
