package pack

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkPack packs a directory with one 256 MiB file of random bytes.
func BenchmarkPack(b *testing.B) {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "weights.bin"))
	if err != nil {
		b.Fatal(err)
	}
	const size = 256 << 20
	if _, err := io.CopyN(f, rand.NewChaCha8([32]byte{}), size); err != nil {
		b.Fatal(err)
	}
	f.Close()
	tmp := b.TempDir()
	b.SetBytes(size)
	for b.Loop() {
		a, err := Pack(dir, tmp)
		if err != nil {
			b.Fatal(err)
		}
		a.Remove()
	}
}

// BenchmarkPackSmallFiles packs 10,000 files of 4 KiB in 100 directories, a source
// tree with many small files.
func BenchmarkPackSmallFiles(b *testing.B) {
	dir := b.TempDir()
	src := rand.NewChaCha8([32]byte{})
	for i := range 10_000 {
		name := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%100), fmt.Sprintf("mod%04d.py", i))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			b.Fatal(err)
		}
		content := make([]byte, 4<<10)
		_, _ = src.Read(content)
		if err := os.WriteFile(name, content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tmp := b.TempDir()
	b.SetBytes(10_000 * 4 << 10)
	for b.Loop() {
		a, err := Pack(dir, tmp)
		if err != nil {
			b.Fatal(err)
		}
		a.Remove()
	}
}
