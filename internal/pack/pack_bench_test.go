package pack

import (
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
