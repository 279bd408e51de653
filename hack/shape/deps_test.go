package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForbiddenDeps reads what go list -deps printed for the dashboard before the
// CLI was split, trimmed, with near misses added: packages named like a forbidden one
// but not it.
func TestForbiddenDeps(t *testing.T) {
	data, err := os.ReadFile("testdata/dashboard-deps.txt")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"cobra", "internal/cli", "localcluster", "controlplane", "localnode"}
	got := forbiddenDeps("./cmd/tfk8s-dashboard", strings.Fields(string(data)), forbidden)
	want := []string{
		"./cmd/tfk8s-dashboard: links github.com/spf13/cobra (no cobra allowed)",
		"./cmd/tfk8s-dashboard: links github.com/tfk8s/tfk8s/internal/controlplane (no controlplane allowed)",
		"./cmd/tfk8s-dashboard: links github.com/tfk8s/tfk8s/internal/localnode/gpus (no localnode allowed)",
		"./cmd/tfk8s-dashboard: links github.com/tfk8s/tfk8s/internal/localnode (no localnode allowed)",
		"./cmd/tfk8s-dashboard: links github.com/tfk8s/tfk8s/internal/localcluster (no localcluster allowed)",
		"./cmd/tfk8s-dashboard: links github.com/tfk8s/tfk8s/internal/cli (no internal/cli allowed)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forbiddenDeps (-want +got):\n%s", diff)
	}
}

func TestHasSegments(t *testing.T) {
	tests := []struct {
		path, want string
		match      bool
	}{
		{"github.com/tfk8s/tfk8s/internal/cli", "internal/cli", true},
		{"github.com/tfk8s/tfk8s/internal/cli/flags", "internal/cli", true},
		{"github.com/tfk8s/tfk8s/internal/client", "internal/cli", false},
		{"github.com/spf13/cobra", "cobra", true},
		{"cobra", "cobra", true},
		{"github.com/spf13/cobra-cli", "cobra", false},
		{"internal", "internal/cli", false},
	}
	for _, tc := range tests {
		if got := hasSegments(tc.path, tc.want); got != tc.match {
			t.Errorf("hasSegments(%q, %q) = %v, want %v", tc.path, tc.want, got, tc.match)
		}
	}
}
