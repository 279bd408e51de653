package pack

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// agedTree writes files whose modification times lie an hour back, as a tree edited
// earlier and submitted now.
func agedTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	old := time.Now().Add(-time.Hour)
	for name := range files {
		if err := os.Chtimes(filepath.Join(dir, name), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fingerprintOrFail(t *testing.T, dir string) string {
	t.Helper()
	fp, err := Fingerprint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

func TestFingerprintFollowsEveryChange(t *testing.T) {
	dir := agedTree(t, map[string]string{"train.py": "print(1)\n", "lib/model.py": "M = 1\n", ".tfk8signore": "*.log\n"})
	first := fingerprintOrFail(t, dir)
	if first == "" {
		t.Fatal("no fingerprint for a tree last changed an hour ago")
	}
	if again := fingerprintOrFail(t, dir); again != first {
		t.Error("the fingerprint of an unchanged tree changed")
	}
	// An ignored file is not part of the archive, nor of its fingerprint.
	writeTree(t, dir, map[string]string{"run.log": "x"})
	if fingerprintOrFail(t, dir) != first {
		t.Error("an ignored file changed the fingerprint")
	}

	// Rewritten with the same size and its old modification time restored: the change
	// time still tells.
	p := filepath.Join(dir, "train.py")
	st, _ := os.Stat(p)
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(p, []byte("print(2)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	rewritten := fingerprintOrFail(t, dir)
	if rewritten == first || rewritten == "" {
		t.Errorf("fingerprint %q after a rewrite that kept size and time, was %q", rewritten, first)
	}

	// Just modified: too recent to trust.
	writeTree(t, dir, map[string]string{"lib/model.py": "M = 2\n"})
	if fp := fingerprintOrFail(t, dir); fp != "" {
		t.Errorf("fingerprint %q for a tree modified a moment ago, want none", fp)
	}
}

func TestDigestCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tfk8s", "digests.json")
	c := NewDigestCache(path)
	if _, ok := c.Get("a"); ok {
		t.Fatal("an empty cache knows a fingerprint")
	}
	c.Put("a", CachedDigest{Digest: "d1", Size: 10})
	if d, ok := NewDigestCache(path).Get("a"); !ok || d.Digest != "d1" || d.Size != 10 {
		t.Errorf("Get after Put = %+v, %v", d, ok)
	}
	c.Forget("a")
	if _, ok := c.Get("a"); ok {
		t.Error("a forgotten fingerprint is still known")
	}

	// The least recently used entries go first.
	for i := range digestCacheEntries + 10 {
		c.Put(fmt.Sprint(i), CachedDigest{Digest: fmt.Sprint("d", i)})
	}
	if _, ok := c.Get("0"); ok {
		t.Error("the oldest entry was kept beyond the cache's size")
	}
	if d, ok := c.Get(fmt.Sprint(digestCacheEntries + 9)); !ok || d.Digest != fmt.Sprint("d", digestCacheEntries+9) {
		t.Error("the newest entry is missing")
	}

	// A damaged file is an empty cache, and is replaced.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("1"); ok {
		t.Error("a damaged cache file answered")
	}
	c.Put("b", CachedDigest{Digest: "d2"})
	if d, ok := c.Get("b"); !ok || d.Digest != "d2" {
		t.Error("the damaged cache was not replaced")
	}

	// No file: nothing remembered, nothing written.
	none := NewDigestCache("")
	none.Put("c", CachedDigest{Digest: "d3"})
	if _, ok := none.Get("c"); ok {
		t.Error("a cache without a file remembered")
	}
}
