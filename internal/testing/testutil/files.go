package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to name, creating the directories it needs.
func WriteFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
