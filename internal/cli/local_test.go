//go:build !sdk

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestLocalKubeconfig runs `tfk8s local kubeconfig` as a user does, through the root
// command: an error naming what to run before the cluster is up, then its path, and
// with --raw its content.
func TestLocalKubeconfig(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			Getenv: func(string) string { return "" }}
		code := Main(context.Background(), append([]string{"local", "kubeconfig", "--dir", dir}, args...), env)
		return out.String(), errOut.String(), code
	}
	if _, stderr, code := run(); code == 0 || !strings.Contains(stderr, "run tfk8s local up --dir "+dir) {
		t.Errorf("before up: exit %d, stderr %q; want an error saying to run up", code, stderr)
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{{nil, path + "\n"}, {[]string{"--raw"}, "apiVersion: v1\n"}} {
		if got, stderr, code := run(tc.args...); code != 0 || got != tc.want {
			t.Errorf("local kubeconfig %v: exit %d, %q (stderr %q); want %q", tc.args, code, got, stderr, tc.want)
		}
	}
}
