package node

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostInfoParsers(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemFree:  100 kB\nMemTotal:       24684096 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := memTotal(meminfo); err != nil || got != 24684096*1024 {
		t.Errorf("memTotal = %d, %v", got, err)
	}
	if err := os.WriteFile(meminfo, []byte("MemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := memTotal(meminfo); err == nil {
		t.Error("memTotal without MemTotal: no error")
	}
	osRelease := filepath.Join(dir, "os-release")
	if err := os.WriteFile(osRelease, []byte("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := osPrettyName(osRelease); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("osPrettyName = %q", got)
	}
}
