// Package nvmltest builds a fake libnvidia-ml for tests: testdata/fakenvml.c, which has the
// C interface of the NVML functions tfk8s calls, compiled with the machine's C
// compiler, so that tests load it through the same dlopen as the real library.
package nvmltest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build compiles fakenvml.c with the -D defines given (FAKE_INIT, FAKE_COUNT,
// FAKE_UTIL_FAIL: the file says what each does) into dir/libnvidia-ml.so.1 and
// returns its path. It fails the test, saying what to install, where there is no
// C compiler.
func Build(t testing.TB, dir string, defines ...string) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("finding fakenvml.c: no caller information")
	}
	return Compile(t, filepath.Join(filepath.Dir(self), "testdata", "fakenvml.c"), dir, defines...)
}

// Compile compiles the C file src with the machine's cc into dir/libnvidia-ml.so.1.
// It fails the test, saying what to install, where there is no C compiler.
func Compile(t testing.TB, src, dir string, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("the NVML tests compile a fake libnvidia-ml.so.1 with a C compiler, and cc is not on PATH (install gcc): %v", err)
	}
	out := filepath.Join(dir, "libnvidia-ml.so.1")
	args := append([]string{"-shared", "-fPIC", "-o", out, src}, defines...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s: %v\n%s", src, err, b)
	}
	return out
}

// Command builds the tfk8s-nvml command into a temporary directory as make build
// does, CGO_ENABLED=0, and returns its path.
func Command(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tfk8s-nvml")
	c := exec.Command("go", "build", "-o", out, "github.com/tfk8s/tfk8s/cmd/tfk8s-nvml")
	c.Env = append(c.Environ(), "CGO_ENABLED=0")
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("building tfk8s-nvml: %v\n%s", err, b)
	}
	return out
}
