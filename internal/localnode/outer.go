package localnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// killTimeout bounds the SIGKILL rounds over the node's cgroups.
const killTimeout = 30 * time.Second

// InnerArg is the first argument with which tfk8s-nodeinit runs as the inner half.
const InnerArg = "inner"

// Run is the node's init in the host's namespaces. It clears what a node that crashed
// may have left, starts the inner half (self, the tfk8s-nodeinit executable, with
// InnerArg) in new namespaces, connects it to the host bridge, and waits until ctx ends
// or the inner half exits. Then it stops the inner half and removes every process,
// cgroup, route and link of the node: only the state directory stays.
func Run(ctx context.Context, c Config, self string) (err error) {
	hierarchies, err := cgroupHierarchies(cgroupMount)
	if err != nil {
		return err
	}
	if err := Cleanup(c); err != nil {
		return fmt.Errorf("clearing what the node left before: %w", err)
	}
	defer func() { err = errors.Join(err, Cleanup(c)) }()
	system := path.Join(c.CgroupRoot, systemCgroup)
	if err := createCgroups(hierarchies, system); err != nil {
		return err
	}
	// Every program of the node is started from here, and so runs in its cgroups.
	if err := joinCgroups(hierarchies, system, os.Getpid()); err != nil {
		return err
	}
	inner, release, err := startInner(c, self)
	if err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- inner.Wait() }()
	if err := connectNode(c, inner.Process.Pid); err != nil {
		_ = inner.Process.Kill()
		<-exited
		return err
	}
	if err := release(); err != nil {
		_ = inner.Process.Kill()
		<-exited
		return err
	}
	select {
	case err := <-exited:
		return fmt.Errorf("the node's inner half ended: %v", err)
	case <-ctx.Done():
	}
	// The inner half gives each pod its grace period; whoever stops the node bounds
	// the wait (tfk8s local down: the longest grace period and a margin).
	_ = inner.Process.Signal(syscall.SIGTERM)
	<-exited
	return nil
}

// startInner starts the inner half in new mount, network and UTS namespaces. It waits
// on a pipe until the returned release is called, once its network is in place.
func startInner(c Config, self string) (*exec.Cmd, func() error, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("creating the inner half's pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(self, InnerArg, ConfigPath(c.StateDir))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWUTS}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("starting the node's inner half: %w", err)
	}
	release := func() error {
		defer w.Close()
		if _, err := w.Write([]byte{1}); err != nil {
			return fmt.Errorf("releasing the node's inner half: %w", err)
		}
		return nil
	}
	return cmd, release, nil
}

// Cleanup removes what is left of a node that is not running: every process in its
// cgroups (the shims and containers of a node that crashed), the cgroups, the host's
// route to its pods and its veth. The calling process must not be in the node's
// cgroups; if it is, it moves to the root of each hierarchy first.
func Cleanup(c Config) error {
	hierarchies, err := cgroupHierarchies(cgroupMount)
	if err != nil {
		return err
	}
	self := os.Getpid()
	if err := killCgroups(hierarchies, c.CgroupRoot, self, killTimeout); err != nil {
		return err
	}
	for _, h := range hierarchies {
		_ = os.WriteFile(filepath.Join(h, "cgroup.procs"), []byte(strconv.Itoa(self)), 0o644)
	}
	errs := []error{removeCgroups(hierarchies, c.CgroupRoot), disconnectNode(c)}
	// The parent of the node's cgroup root is shared with the cluster's other nodes:
	// removed by whichever node goes last.
	if parent := path.Dir(c.CgroupRoot); parent != "/" {
		for _, h := range hierarchies {
			_ = os.Remove(filepath.Join(h, parent))
		}
	}
	return errors.Join(errs...)
}
