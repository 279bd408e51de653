package main

import (
	"fmt"
	"slices"
	"strings"
)

// forbiddenDeps lists, one offence each, the dependencies of pkg that contain one of
// forbidden as whole path segments: "internal/cli" matches .../internal/cli and
// .../internal/cli/x, not .../internal/client.
func forbiddenDeps(pkg string, deps, forbidden []string) []string {
	var offenders []string
	for _, dep := range deps {
		for _, f := range forbidden {
			if f != "" && hasSegments(dep, f) {
				offenders = append(offenders, fmt.Sprintf("%s: links %s (no %s allowed)", pkg, dep, f))
				break
			}
		}
	}
	return offenders
}

// hasSegments reports whether the segments of want appear, in a row, among those of
// importPath.
func hasSegments(importPath, want string) bool {
	have, w := strings.Split(importPath, "/"), strings.Split(want, "/")
	for i := 0; i+len(w) <= len(have); i++ {
		if slices.Equal(have[i:i+len(w)], w) {
			return true
		}
	}
	return false
}
