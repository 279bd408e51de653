package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmitRefusesLinksLeavingTheDirectories: a data set or code directory holding a
// symbolic link to a file outside it (the user's ~/.tfk8s/config) is refused by name
// before anything is uploaded or created; links that stay inside are shipped.
func TestSubmitRefusesLinksLeavingTheDirectories(t *testing.T) {
	f := newFixture(t)
	home := writeTree(t, map[string]string{".tfk8s/config": "s3:\n  secretAccessKey: do-not-ship\n"})
	secret := filepath.Join(home, ".tfk8s", "config")
	link := func(dir, name, target string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}

	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	data := writeTree(t, map[string]string{"train/part-0.csv": "1,2\n"})
	link(data, "alias.csv", "train/part-0.csv")
	escaping := link(data, "x", secret)
	r := f.tfk8s("submit", code, "--name", "leaky-data", "--image", "tf:2.16", "--data", data, "--", "python3", "train.py")
	if r.code == 0 || !strings.Contains(r.stderr, "refusing "+escaping+": a symbolic link to "+secret+", outside "+data) {
		t.Errorf("submit --data with %s -> %s: want a refusal naming the link and its target, got %s", escaping, secret, r)
	}

	codeLink := link(code, "config", secret)
	r = f.tfk8s("submit", code, "--name", "leaky-code", "--image", "tf:2.16", "--", "python3", "train.py")
	if r.code == 0 || !strings.Contains(r.stderr, "refusing "+codeLink+": a symbolic link to "+secret+", outside "+code) {
		t.Errorf("submit DIR with %s -> %s: want a refusal naming the link and its target, got %s", codeLink, secret, r)
	}
	if got := f.objects(); len(got) != 0 {
		t.Errorf("refused submits uploaded %v", got)
	}
	if got := f.jobs(); len(got) != 0 {
		t.Errorf("refused submits created tfjobs %v", got)
	}

	// Without the links that leave, the same directories go, the inside link with them.
	for _, p := range []string{escaping, codeLink} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	f.mustSucceed("submit", code, "--name", "clean", "--image", "tf:2.16", "--data", data, "--", "python3", "train.py")
	var stored []string
	for _, key := range f.objects() {
		if strings.HasPrefix(key, "datasets/") && !strings.HasSuffix(key, ".json") {
			stored = append(stored, key[strings.LastIndex(key, "/")+1:])
		}
	}
	if strings.Join(stored, " ") != "alias.csv part-0.csv" {
		t.Errorf("data set files stored: %v, want alias.csv and part-0.csv", stored)
	}
}
