//go:build unix

// Package examples holds tfk8s's example programs. Its tests run the dependency-free
// trainer's own Python test suite and byte-compile every Python file, TensorFlow
// programs included; images_test.go and tensorflow_test.go run them in the images make
// tensorflow-image builds, when they are there.
package examples

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trainerTestTimeout bounds the trainer's test suite, which takes about 10 s on two cores.
const trainerTestTimeout = 3 * time.Minute

// python3 returns the path of python3, or skips the test.
func python3(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python examples cannot be tested")
	}
	return path
}

// pythonEnv is the environment of the Python commands: no bytecode left beside the
// examples, and unbuffered output, so that a failure shows everything printed.
func pythonEnv(pycachePrefix string) []string {
	env := append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	if pycachePrefix != "" {
		env = append(env, "PYTHONPYCACHEPREFIX="+pycachePrefix)
	}
	return env
}

func TestTrainer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters of trainer processes: skipped with -short")
	}
	py := python3(t)
	ctx, cancel := context.WithTimeout(context.Background(), trainerTestTimeout)
	defer cancel()

	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "-v", "test_trainer")
	cmd.Dir = "trainer"
	cmd.Env = pythonEnv("")
	// The suite starts trainer processes of its own. In a process group of their own
	// they can all be killed with it on timeout, rather than outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second

	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start).Round(time.Millisecond)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("python3 -m unittest test_trainer still running after %v, killed:\n%s", trainerTestTimeout, out)
	}
	if err != nil {
		t.Fatalf("python3 -m unittest test_trainer: %v after %v:\n%s", err, elapsed, out)
	}
	t.Logf("trainer tests passed in %v:\n%s", elapsed, out)
}

func TestPythonCompiles(t *testing.T) {
	py := python3(t)
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".py") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trainer/trainer.py", "tensorflow/ps_strategy.py", "tensorflow/multi_worker_mirrored.py"} {
		found := false
		for _, f := range files {
			found = found || f == filepath.FromSlash(want)
		}
		if !found {
			t.Errorf("%s is missing from examples/", want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// py_compile writes the bytecode it makes: into a temporary directory, not the tree.
	cmd := exec.CommandContext(ctx, py, append([]string{"-m", "py_compile"}, files...)...)
	cmd.Env = pythonEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("python3 -m py_compile %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	t.Logf("byte-compiled %d files: %s", len(files), strings.Join(files, ", "))
}
