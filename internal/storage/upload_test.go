package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestFormatBytes(t *testing.T) {
	cases := map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 12_345_678: "11.8 MiB", 3 << 30: "3.0 GiB"}
	for n, want := range cases {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRenderBar(t *testing.T) {
	cases := []struct {
		done, total int64
		want        string
	}{
		{0, 1000, "[>         ]   0% 0 B/1000 B"},
		{450, 1000, "[====>     ]  45% 450 B/1000 B"},
		{1000, 1000, "[==========] 100% 1000 B/1000 B"},
		{2000, 1000, "[==========] 100% 1000 B/1000 B"},
		{10, -1, "10 B"},
	}
	for _, tc := range cases {
		if got := renderBar(tc.done, tc.total, 10); got != tc.want {
			t.Errorf("renderBar(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	// Not a terminal: no bar, and a nil bar takes updates without drawing.
	var b strings.Builder
	bar := newProgressBar(&b, "uploading")
	bar.update(1, 2)
	bar.finish()
	if bar != nil || b.Len() != 0 {
		t.Errorf("progress bar drawn on a non-terminal: %q", b.String())
	}
}

func TestScanDataIsContentAddressed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) { testutil.WriteFile(t, filepath.Join(dir, name), content) }
	write("train/part-0.csv", "1,2,3\n")
	write("test/part-0.csv", "4,5\n")
	first, err := scanData(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.files != 2 || first.bytes != 10 {
		t.Errorf("scanData: %d files, %d bytes; want 2 files, 10 bytes", first.files, first.bytes)
	}
	again, _ := scanData(dir)
	if again.digest != first.digest {
		t.Errorf("the digest of an unchanged directory changed: %s, then %s", first.digest, again.digest)
	}
	write("test/part-0.csv", "4,6\n")
	changed, _ := scanData(dir)
	if changed.digest == first.digest {
		t.Error("the digest did not change with a file's content")
	}
	if got, want := changed.Prefix(URI{Bucket: "bkt"}).String(), "s3://bkt/datasets/sha256-"+changed.digest+"/"; got != want {
		t.Errorf("prefix = %s, want %s", got, want)
	}
	if got, want := changed.marker(URI{Bucket: "bkt"}).String(), "s3://bkt/datasets/sha256-"+changed.digest+".json"; got != want {
		t.Errorf("marker = %s, want %s", got, want)
	}
	// Under a storage prefix (a notebook's), the set and its marker are there too.
	nb := URI{Bucket: "bkt", Key: "notebooks/team/nb/"}
	if got, want := changed.Prefix(nb).String(), "s3://bkt/notebooks/team/nb/datasets/sha256-"+changed.digest+"/"; got != want {
		t.Errorf("prefix under %s = %s, want %s", nb, got, want)
	}
	if got, want := changed.marker(nb).String(), "s3://bkt/notebooks/team/nb/datasets/sha256-"+changed.digest+".json"; got != want {
		t.Errorf("marker under %s = %s, want %s", nb, got, want)
	}
}

// TestScanDataDigestIsThePathOrderOne: the data set's digest is the one
// DataManifest defines, over the files in path order, which is not the order a
// walk of the tree visits "a/b" and "a.txt" in; and the list the marker gets is that
// order too.
func TestScanDataDigestIsThePathOrderOne(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a/b": "in a dir\n", "a.txt": "beside it\n"}
	for name, content := range files {
		testutil.WriteFile(t, filepath.Join(dir, name), content)
	}
	d, err := scanData(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := sha256.New()
	var want []DataFile
	for _, name := range []string{"a.txt", "a/b"} {
		sum := sha256.Sum256([]byte(files[name]))
		want = append(want, DataFile{Path: name, Size: int64(len(files[name])), SHA256: hex.EncodeToString(sum[:])})
		fmt.Fprintf(tree, "%s\x00%d\x00%x\n", name, len(files[name]), sum)
	}
	if got := hex.EncodeToString(tree.Sum(nil)); d.digest != got {
		t.Errorf("digest = %s, want %s", d.digest, got)
	}
	if diff := cmp.Diff(want, d.list); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
