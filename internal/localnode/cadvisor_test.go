package localnode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinkContainerdSocket: the link is made where none was, and an earlier one,
// pointing elsewhere, is replaced.
func TestLinkContainerdSocket(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "run", "containerd", "containerd.sock")
	for _, socket := range []string{filepath.Join(dir, "state-a", "containerd.sock"), filepath.Join(dir, "state-b", "containerd.sock")} {
		if err := linkContainerdSocket(socket, link); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(link); err != nil || got != socket {
			t.Errorf("link %s -> %q (%v), want %s", link, got, err, socket)
		}
	}
}
