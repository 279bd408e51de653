package pack

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writeTree creates files (slash-separated relative path → content) under dir; a path
// ending with "/" is an empty directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if name[len(name)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFilesHonoursIgnoreRules(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{
			name:  "no ignore file",
			files: map[string]string{"train.py": "", "lib/model.py": ""},
			want:  []string{"lib/", "lib/model.py", "train.py"},
		},
		{
			name: "git metadata and the ignore file itself are always left out",
			files: map[string]string{
				"train.py": "", ".git/HEAD": "", "sub/.git/config": "", ".tfk8signore": "", "sub/.tfk8signore": "",
				".gitignore": "", ".github/ci.yaml": "",
			},
			want: []string{".github/", ".github/ci.yaml", ".gitignore", "sub/", "train.py"},
		},
		{
			name: "globs, directories and negation",
			files: map[string]string{
				".tfk8signore": "# caches\n*.pyc\n__pycache__/\ndata/\n!keep.pyc\n\n",
				"train.py":     "", "a.pyc": "", "keep.pyc": "", "lib/b.pyc": "", "lib/__pycache__/c.cpython-311.pyc": "",
				"data/big.csv": "", "lib/data": "a file named data stays",
			},
			want: []string{"keep.pyc", "lib/", "lib/data", "train.py"},
		},
		{
			name: "anchored patterns match at the root only",
			files: map[string]string{
				".tfk8signore": "/build\nlogs/*.log\n",
				"build/out":    "", "src/build/keep": "", "logs/a.log": "", "logs/a.txt": "", "src/logs/b.log": "",
			},
			want: []string{"logs/", "logs/a.txt", "src/", "src/build/", "src/build/keep", "src/logs/", "src/logs/b.log"},
		},
		{
			name: "double star",
			files: map[string]string{
				".tfk8signore":  "**/checkpoints/\nsrc/**/*.tmp\n",
				"checkpoints/1": "", "a/b/checkpoints/2": "", "src/x/y/z.tmp": "", "src/x/y/z.py": "",
			},
			want: []string{"a/", "a/b/", "src/", "src/x/", "src/x/y/", "src/x/y/z.py"},
		},
		{
			name: "nested ignore files apply below their directory and take precedence",
			files: map[string]string{
				".tfk8signore":     "*.bin\n",
				"sub/.tfk8signore": "!weights.bin\nnotes.txt\n",
				"a.bin":            "", "weights.bin": "", "notes.txt": "", "sub/weights.bin": "", "sub/other.bin": "", "sub/notes.txt": "",
			},
			want: []string{"notes.txt", "sub/", "sub/weights.bin"},
		},
		{
			name: "a file inside an ignored directory cannot be re-included",
			files: map[string]string{
				".tfk8signore": "out/\n!out/keep\n",
				"out/keep":     "", "main.py": "",
			},
			want: []string{"main.py"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			got, err := Files(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Files (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackIsDeterministic(t *testing.T) {
	files := map[string]string{
		"train.py": "print('hi')\n", "lib/model.py": "class M: pass\n", "lib/empty/": "",
		"data/vocab.txt": string(bytes.Repeat([]byte("word\n"), 10_000)),
	}
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, files)
	// The second copy is written in another order, at another time, with other
	// permissions on a plain file: none of it may change the archive.
	time.Sleep(10 * time.Millisecond)
	writeTree(t, b, files)
	if err := os.Chmod(filepath.Join(b, "train.py"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(b, "lib", "model.py"), past, past); err != nil {
		t.Fatal(err)
	}

	first := packOrFail(t, a)
	again := packOrFail(t, a)
	other := packOrFail(t, b)
	if first.SHA256 != again.SHA256 || first.SHA256 != other.SHA256 {
		t.Errorf("archives of the same tree differ: %s, %s, %s", first.SHA256, again.SHA256, other.SHA256)
	}

	content, err := os.ReadFile(first.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if got := hex.EncodeToString(sum[:]); got != first.SHA256 || int64(len(content)) != first.Size {
		t.Errorf("Archive says sha256 %s size %d, file has %s size %d", first.SHA256, first.Size, got, len(content))
	}

	writeTree(t, b, map[string]string{"train.py": "print('changed')\n"})
	if changed := packOrFail(t, b); changed.SHA256 == first.SHA256 {
		t.Error("changing a file did not change the archive's digest")
	}
}

// packOrFail packs dir into the test's temporary directory.
func packOrFail(t *testing.T, dir string) Archive {
	t.Helper()
	a, err := Pack(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{
		"train.py": "print('hi')\n", "lib/model.py": "M = 1\n", "empty/": "", ".tfk8signore": "*.log\n", "run.log": "x",
	})
	if err := os.Chmod(filepath.Join(src, "train.py"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("lib/model.py", filepath.Join(src, "model.py")); err != nil {
		t.Fatal(err)
	}
	a := packOrFail(t, src)
	f, err := os.Open(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dst := filepath.Join(t.TempDir(), "workspace")
	if err := Unpack(f, dst, Limits{}); err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dst {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		info, _ := d.Info()
		switch {
		case d.IsDir():
			got[rel+"/"] = info.Mode().String()
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			got[rel] = "-> " + target
		default:
			b, _ := os.ReadFile(p)
			got[rel] = info.Mode().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"train.py":     "-rwxr-xr-x print('hi')\n",
		"lib/":         "drwxr-xr-x",
		"lib/model.py": "-rw-r--r-- M = 1\n",
		"empty/":       "drwxr-xr-x",
		"model.py":     "-> lib/model.py",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unpacked tree (-want +got):\n%s", diff)
	}
}

func TestSHA256FromKey(t *testing.T) {
	hex64 := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		key    string
		want   string
		wantOK bool
	}{
		{key: Key("code/team", hex64), want: hex64, wantOK: true},
		{key: Key("", hex64), want: hex64, wantOK: true},
		{key: "code/sha256-" + hex64[:60] + ".tar.gz"},
		{key: "code/sha256-" + hex64 + ".tgz"},
		{key: "code/xsha256-" + hex64 + ".tar.gz"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got, ok := SHA256FromKey(tc.key)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("SHA256FromKey(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if got, want := Key("code/team/", hex64), "code/team/sha256-"+hex64+".tar.gz"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

// TestPackStoresWhatDoesNotCompress packs source files around model weights of random
// bytes: the source is deflated, the weights are stored as they are, and the archive
// (gzip members of both kinds) unpacks the same with tfk8s, GNU tar and Python.
func TestPackStoresWhatDoesNotCompress(t *testing.T) {
	src := t.TempDir()
	code := strings.Repeat("def step(x):\n    return x * 2  # one training step\n", 2000) // 100 KB
	weights := make([]byte, 1<<20)
	_, _ = rand.NewChaCha8([32]byte{7}).Read(weights)
	writeTree(t, src, map[string]string{
		"a_train.py": code, "b_weights.bin": string(weights), "c_model.py": code, "d_small.bin": string(weights[:100]),
	})
	a := packOrFail(t, src)
	// Deflate shrinks the two source files to a few KB; the weights stay 1 MiB.
	if a.Size < 1<<20 || a.Size > 1<<20+64<<10 {
		t.Errorf("archive of 1 MiB of random bytes and 200 KB of source is %d bytes", a.Size)
	}
	// Three members: the first source file deflated, the weights stored, the second
	// source file deflated with the small file after it.
	f, err := os.Open(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	members := 1
	for ; ; members++ {
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		if err := zr.Reset(br); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if members != 3 {
		t.Errorf("%d gzip members, want 3", members)
	}

	want := map[string]string{"a_train.py": code, "b_weights.bin": string(weights), "c_model.py": code, "d_small.bin": string(weights[:100])}
	readTree := func(dir string) map[string]string {
		got := map[string]string{}
		for name := range want {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			got[name] = string(b)
		}
		return got
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := Unpack(f, dst, Limits{}); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(want, readTree(dst)) {
		t.Error("tfk8s unpacked other content")
	}
	for _, tool := range [][]string{
		{"tar", "-xzf", a.Path, "-C"},
		{"python3", "-c", "import sys, tarfile; tarfile.open(sys.argv[1], 'r:gz').extractall(sys.argv[2])", a.Path},
	} {
		if _, err := exec.LookPath(tool[0]); err != nil {
			t.Errorf("%s is needed to check the archive: %v", tool[0], err)
			continue
		}
		dst := t.TempDir()
		if out, err := exec.Command(tool[0], append(tool[1:], dst)...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", tool[0], err, out)
			continue
		}
		if !maps.Equal(want, readTree(dst)) {
			t.Errorf("%s unpacked other content", tool[0])
		}
	}
}
