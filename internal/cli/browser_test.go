//go:build !sdk

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenBrowser: --open runs the platform's opener with the URL, and says what to
// do when there is none.
func TestOpenBrowser(t *testing.T) {
	opener := browserOpener()
	dir := t.TempDir()
	got := filepath.Join(dir, "opened")
	script := "#!/bin/sh\necho \"$1\" > " + got + ".tmp && mv " + got + ".tmp " + got + "\n"
	if err := os.WriteFile(filepath.Join(dir, opener), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := openBrowser("http://127.0.0.1:41234/"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(got)
		if err == nil {
			if string(data) != "http://127.0.0.1:41234/\n" {
				t.Errorf("%s got %q, want the URL", opener, data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not run within 10 s", opener)
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Setenv("PATH", t.TempDir())
	err := openBrowser("http://127.0.0.1:41234/")
	if want := opener + " not found; open http://127.0.0.1:41234/ yourself"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}
