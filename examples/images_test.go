//go:build linux

package examples

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/testing/registryserver"
)

// The tests of this file run the examples in the images make tensorflow-image builds,
// unpacked and entered with chroot, as the node runs them: they need root and the
// layouts in ../_out/images, and are skipped without them.

// tfTimeout bounds one TensorFlow cluster's run: about a minute on two shared cores.
const tfTimeout = 5 * time.Minute

// unpacked holds the image roots imageRoot made, by image: each is unpacked once (it
// takes half a minute) and removed by TestMain.
var unpacked = map[string]string{}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, root := range unpacked {
		os.RemoveAll(root)
	}
	os.Exit(code)
}

// imageRoot unpacks the image of the OCI layout ../_out/images/<name> into a temporary
// directory, once per test binary, with the examples in /workspace, and returns its
// path; each test's programs write under their own directories in it.
func imageRoot(t *testing.T, name string) string {
	t.Helper()
	if root, ok := unpacked[name]; ok {
		return root
	}
	if testing.Short() {
		t.Skip("unpacks an image: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the examples run in their image under chroot, which needs root (make test runs as root)")
	}
	dir := filepath.Join("..", "_out", "images", name)
	inner := registryserver.BuiltIndex(t, dir)
	im, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	img, err := inner.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp("", "tfk8s-image-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	unpacked[name] = root
	start := time.Now()
	for _, l := range layers {
		d, _ := l.Digest()
		if out, err := exec.Command("tar", "-xzf", filepath.Join(dir, "blobs", d.Algorithm, d.Hex), "-C", root).CombinedOutput(); err != nil {
			t.Fatalf("unpacking layer %s of %s: %v\n%s", d, dir, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "dev", "shm"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"null", "zero", "urandom", "random"} {
		if out, err := exec.Command("cp", "-a", "/dev/"+dev, filepath.Join(root, "dev", dev)).CombinedOutput(); err != nil {
			t.Fatalf("making /dev/%s: %v\n%s", dev, err, out)
		}
	}
	if out, err := exec.Command("cp", "-r", ".", filepath.Join(root, "workspace")).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	t.Logf("unpacked %s (%d layers) in %v", dir, len(layers), time.Since(start).Round(time.Millisecond))
	return root
}

func TestTrainerInPythonImage(t *testing.T) {
	root := imageRoot(t, "python")
	ctx, cancel := context.WithTimeout(context.Background(), trainerTestTimeout)
	defer cancel()
	cmd := chroot(ctx, root, "/workspace/trainer", nil, "python3", "-m", "unittest", "test_trainer")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest test_trainer in the python image: %v after %v:\n%s", err, time.Since(start), out)
	}
	t.Logf("the trainer's tests passed in the python image in %v", time.Since(start).Round(time.Millisecond))
}

// chroot is a command run in root, in dir, with a /proc of its own (TensorFlow reads
// /proc/self), as the node's runtime gives a container: unshare mounts it in a mount
// namespace that goes with the command. The command is in a process group of its own,
// so that it is killed with whatever it started.
func chroot(ctx context.Context, root, dir string, env []string, args ...string) *exec.Cmd {
	script := fmt.Sprintf("cd %s && exec \"$@\"", dir)
	chrootPath, err := exec.LookPath("chroot")
	if err != nil {
		chrootPath = "/usr/sbin/chroot"
	}
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--pid", "--fork", "--kill-child",
		"--mount-proc=" + filepath.Join(root, "proc"), chrootPath, root, "/bin/sh", "-c", script, "sh"}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8",
		"PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// cluster runs tasks of one TensorFlow program in root, each with the TF_CONFIG of its
// task in a cluster on 127.0.0.1, its output in a file of its own.
type cluster struct {
	t       *testing.T
	ctx     context.Context
	root    string
	program string
	args    []string
	spec    map[string][]string // job -> addresses
	tasks   map[string]*task
	logs    string
}

// task is one running program; done is closed when it has exited, with err.
type task struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// newCluster gives each job of counts (e.g. {"ps": 1, "worker": 2}) free ports; the
// evaluator, outside the cluster, needs none.
func newCluster(t *testing.T, ctx context.Context, root, program string, counts map[string]int, args ...string) *cluster {
	c := &cluster{t: t, ctx: ctx, root: root, program: program, args: args,
		spec: map[string][]string{}, tasks: map[string]*task{}, logs: t.TempDir()}
	for job, n := range counts {
		for range n {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			c.spec[job] = append(c.spec[job], l.Addr().String())
			l.Close()
		}
	}
	t.Cleanup(c.stop)
	return c
}

// start starts task index of job, its output appended to the task's log.
func (c *cluster) start(job string, index int) {
	cfg, err := json.Marshal(map[string]any{"cluster": c.spec, "task": map[string]any{"type": job, "index": index}})
	if err != nil {
		c.t.Fatal(err)
	}
	name := fmt.Sprintf("%s-%d", job, index)
	log, err := os.OpenFile(filepath.Join(c.logs, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	cmd := chroot(c.ctx, c.root, "/workspace/tensorflow", []string{"TF_CONFIG=" + string(cfg), "TF_CPP_MIN_LOG_LEVEL=2"},
		append([]string{"python3", c.program, "--model-dir=/runs/" + c.t.Name()}, c.args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	tk := &task{cmd: cmd, done: make(chan struct{})}
	go func() {
		tk.err = cmd.Wait()
		close(tk.done)
	}()
	c.tasks[name] = tk
}

// wait waits for a task to exit and fails the test unless it exits 0.
func (c *cluster) wait(name string) {
	c.t.Helper()
	<-c.tasks[name].done
	if err := c.tasks[name].err; err != nil {
		c.t.Fatalf("%s: %v:\n%s", name, err, c.output(name))
	}
}

// waitFor waits until a task has printed line, and fails the test if it exits first.
func (c *cluster) waitFor(name, line string) {
	c.t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(c.output(name), line) {
		select {
		case <-c.tasks[name].done:
			if !strings.Contains(c.output(name), line) {
				c.t.Fatalf("%s exited (%v) before printing %q:\n%s", name, c.tasks[name].err, line, c.output(name))
			}
		case <-tick.C:
		}
	}
}

// kill kills a task and waits for it.
func (c *cluster) kill(name string) {
	_ = syscall.Kill(-c.tasks[name].cmd.Process.Pid, syscall.SIGKILL)
	<-c.tasks[name].done
}

func (c *cluster) output(name string) string {
	out, _ := os.ReadFile(filepath.Join(c.logs, name))
	return string(out)
}

// stop kills every task still running: the servers serve until killed.
func (c *cluster) stop() {
	for name := range c.tasks {
		c.kill(name)
	}
}

// requireLines fails the test unless the task printed every line.
func (c *cluster) requireLines(name string, lines ...string) {
	c.t.Helper()
	out := c.output(name)
	for _, line := range lines {
		if !strings.Contains(out, line) {
			c.t.Errorf("%s did not print %q:\n%s", name, line, out)
		}
	}
}
