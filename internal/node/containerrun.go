package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// maxTerminationMessage caps a container's termination message, as the kubelet does.
	maxTerminationMessage = 4096
	// fallbackLogLines and fallbackLogBytes bound the log tail used as the message of a
	// failed container under FallbackToLogsOnError.
	fallbackLogLines = 80
	fallbackLogBytes = 2048
	// drainTimeout bounds the wait for a container's output after it exited (a process
	// that escaped the container's PID namespace could hold the pipe open).
	drainTimeout = 2 * time.Second
	// pidPoll is how often the start of a container is checked.
	pidPoll = 5 * time.Millisecond
)

// ReasonCreateContainerError is the waiting reason of a container the node failed to
// prepare.
const ReasonCreateContainerError = "CreateContainerError"

// bundlePaths are the files of one container's OCI bundle.
type bundlePaths struct {
	dir, rootfs, upper, work, config, pidFile, runcLog, terminationLog string
}

// runInstance prepares, starts and waits for one instance of the container on img.
func (r *containerRunner) runInstance(ctx context.Context, img *image) exitInfo {
	w := r.w
	// Whether the pod is stopping is asked under the lock that marks the container as
	// starting: stopContainer, run once the pod stops, then either finds it starting and
	// waits to stop it, or it never starts. Asked apart, a stop landing in between found
	// nothing to stop, and the container then ran until the node stopped.
	w.mu.Lock()
	if w.stopping() {
		w.mu.Unlock()
		return exitInfo{}
	}
	r.starting = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		r.starting = false
		w.mu.Unlock()
	}()
	pod := w.currentPod()
	cfg, memLimit, err := r.configure(pod, img)
	if err != nil {
		reason := ReasonCreateContainerError
		if errors.Is(err, errConfig) {
			reason = ReasonCreateContainerConfigError
		}
		r.setWaiting(reason, err.Error())
		w.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return exitInfo{configError: true}
	}
	w.mu.Lock()
	attempt := r.created
	w.mu.Unlock()
	id := fmt.Sprintf("%s-%s", pod.UID, r.spec.Name)
	paths := w.bundlePaths(r.spec.Name)
	failures, err := r.prepareBundle(ctx, id, paths, cfg, attempt, memLimit)
	if err != nil {
		r.cleanupInstance(ctx, id, paths)
		r.setWaiting(ReasonCreateContainerError, err.Error())
		w.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return exitInfo{configError: true}
	}
	defer r.cleanupInstance(ctx, id, paths)

	w.mu.Lock()
	r.created++
	if attempt > 0 {
		r.restarts = attempt
	}
	w.mu.Unlock()
	logPath := w.logPath(r.spec.Name, attempt)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		return r.startFailed(fmt.Sprintf("creating log directory: %v", err))
	}
	lf, err := createLogFile(logPath)
	if err != nil {
		return r.startFailed(err.Error())
	}
	inst := &instance{id: id, exited: make(chan struct{})}
	code, started, err := r.start(ctx, inst, paths, lf)
	if err != nil {
		return r.startFailed(err.Error())
	}
	if !started {
		msg := lastRuncError(paths.runcLog)
		if msg == "" {
			msg = fmt.Sprintf("runc exited with status %d before the container started", code)
		}
		return r.startFailed(msg)
	}
	t := corev1.ContainerStateTerminated{ExitCode: int32(code), FinishedAt: metav1.Now(), ContainerID: "runc://" + id}
	w.mu.Lock()
	killed := inst.stopping
	w.mu.Unlock()
	switch {
	case code == 0:
		t.Reason = ReasonCompleted
	case code == 128+9 && !killed && w.m.cgroups.memoryFailures(string(pod.UID), r.spec.Name) > failures:
		t.Reason = ReasonOOMKilled
	default:
		t.Reason = ReasonError
	}
	t.Message = terminationMessage(paths.terminationLog, r.spec.TerminationMessagePolicy, logPath, code)
	r.setTerminated(t)
	return exitInfo{terminated: t}
}

// configure builds the container's OCI configuration on img and returns its memory
// limit.
func (r *containerRunner) configure(pod *corev1.Pod, img *image) (containerConfig, int64, error) {
	w := r.w
	c := &r.spec
	sb := w.sandboxInfo()
	base := append(imageEnv(img.config), corev1.EnvVar{Name: "HOSTNAME", Value: utsHostname(pod, w.m.opts.ClusterDomain)})
	base = append(base, w.m.apiService.env(pod.Spec.HostNetwork)...)
	gpus := sb.gpus[c.Name]
	base = append(base, gpuEnv(gpus)...)
	env, err := containerEnv(pod, c, w.fields(), w.api(), base)
	if err != nil {
		return containerConfig{}, 0, err
	}
	paths := w.bundlePaths(c.Name)
	cfg := containerConfig{Rootfs: paths.rootfs, ImageRoot: img.root, NetNSPath: sb.netnsPath}
	if !pod.Spec.HostNetwork {
		cfg.Hostname = utsHostname(pod, w.m.opts.ClusterDomain)
	}
	if len(gpus) > 0 {
		cfg.Devices = hostGPUDevices()
	}
	if err := applyContainer(&cfg, pod, c, env, img, w.podRef()); err != nil {
		return containerConfig{}, 0, err
	}
	volumes, err := volumeMounts(c, sb.volumes, env)
	if err != nil {
		return containerConfig{}, 0, err
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	cfg.Mounts = append(sb.fileMounts(), specs.Mount{
		Destination: termPath, Type: "bind", Source: paths.terminationLog, Options: []string{"bind", "rw"},
	})
	if dir := w.m.opts.BinDir; dir != "" && img.host {
		// The tfk8s binaries lead the container's PATH; mounted at their own path, they
		// stay visible when they live under /tmp, which the container gets fresh.
		cfg.Mounts = append(cfg.Mounts, specs.Mount{Destination: dir, Type: "bind", Source: dir, Options: []string{"rbind", "ro"}})
	}
	cfg.Mounts = append(cfg.Mounts, volumes...)
	if img.host {
		// Only the host's root holds the host's secrets; an image's root does not.
		var dests []string
		for _, m := range cfg.Mounts {
			dests = append(dests, m.Destination)
		}
		cfg.MaskedPaths = hiddenPaths(userHome(), w.m.opts.StateDir, w.m.opts.MaskedPaths, dests)
	}
	var memLimit int64
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		memLimit = q.Value()
	}
	return cfg, memLimit, nil
}

// prepareBundle writes the bundle: its cgroup parent, root overlay, termination-log
// file and config.json. It returns the memory cgroup's failure count before the start.
func (r *containerRunner) prepareBundle(ctx context.Context, id string, paths bundlePaths, cfg containerConfig, attempt int32, memLimit int64) (uint64, error) {
	w := r.w
	uid := string(w.uid)
	r.cleanupInstance(ctx, id, paths)
	if err := os.MkdirAll(paths.dir, 0o700); err != nil {
		return 0, fmt.Errorf("creating bundle directory: %w", err)
	}
	failures, held, err := w.m.cgroups.prepare(uid, r.spec.Name, memLimit)
	if err != nil {
		return 0, err
	}
	if !held {
		cfg.MemoryLimit = memLimit
	}
	cfg.CgroupsPath = w.m.cgroups.containerPath(uid, r.spec.Name, strconv.Itoa(int(attempt)))
	if err := os.WriteFile(paths.terminationLog, nil, 0o666); err != nil {
		return 0, fmt.Errorf("creating termination log: %w", err)
	}
	if err := os.Chmod(paths.terminationLog, 0o666); err != nil {
		return 0, fmt.Errorf("opening termination log: %w", err)
	}
	if err := mountRootfs(paths.rootfs, cfg.ImageRoot, paths.upper, paths.work); err != nil {
		return 0, err
	}
	data, err := json.MarshalIndent(buildSpec(cfg), "", "  ")
	if err != nil {
		return 0, fmt.Errorf("encoding OCI spec: %w", err)
	}
	if err := os.WriteFile(paths.config, data, 0o600); err != nil {
		return 0, fmt.Errorf("writing OCI spec: %w", err)
	}
	return failures, nil
}

// start runs the instance under runc and waits until it exits. started reports whether
// the container was created (its pid file appeared) or runc failed before.
func (r *containerRunner) start(ctx context.Context, inst *instance, paths bundlePaths, lf *logFile) (code int, started bool, err error) {
	w := r.w
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		lf.Close()
		return 0, false, fmt.Errorf("creating stdout pipe: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		lf.Close()
		stdoutR.Close()
		stdoutW.Close()
		return 0, false, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd, err := w.m.runc.start(inst.id, paths.dir, paths.pidFile, paths.runcLog, stdoutW, stderrW)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		lf.Close()
		return 0, false, err
	}
	inst.cmd = cmd
	drained := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, s := range []struct {
			r    io.ReadCloser
			name string
		}{{stdoutR, "stdout"}, {stderrR, "stderr"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lf.copyStream(s.r, s.name)
			}()
		}
		wg.Wait()
		close(drained)
	}()
	exitCh := make(chan int, 1)
	go func() { exitCh <- exitCode(cmd.Wait()) }()

	// Wait for the container to be created, or runc to give up.
	var exit int
	exited := false
	for !started && !exited {
		select {
		case exit = <-exitCh:
			exited = true
		case <-time.After(pidPoll):
		}
		if _, err := os.Stat(paths.pidFile); err == nil {
			started = true
		}
	}
	finish := func() {
		select {
		case <-drained:
		case <-time.After(drainTimeout):
		}
		stdoutR.Close()
		stderrR.Close()
		lf.Close()
		close(inst.exited)
	}
	if !started {
		finish()
		return exit, false, nil
	}
	r.setCreated(inst)
	probeCtx, cancelProbes := context.WithCancel(ctx)
	w.mu.Lock()
	inst.cancelProbes = cancelProbes
	w.mu.Unlock()
	go r.afterStart(probeCtx, inst)
	if !exited {
		exit = <-exitCh
	}
	cancelProbes()
	finish()
	return exit, true, nil
}

// afterStart runs the postStart hook, killing the container if it fails; the container
// counts as running once the hook has run, as with the kubelet. Then it runs the
// container's probes.
func (r *containerRunner) afterStart(ctx context.Context, inst *instance) {
	if h := r.spec.Lifecycle; h != nil && h.PostStart != nil {
		if err := r.runHook(ctx, inst, h.PostStart, postStartTimeout); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.w.event(corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed: %v", err)
			r.killInstance(inst, "FailedPostStartHook")
			return
		}
	}
	r.setRunning(inst)
	r.w.event(corev1.EventTypeNormal, "Started", "Started container %s", r.spec.Name)
	r.runProbes(ctx, inst)
}

// startFailed records an instance that runc could not start, as containerd reports it.
func (r *containerRunner) startFailed(msg string) exitInfo {
	t := corev1.ContainerStateTerminated{ExitCode: 128, Reason: ReasonStartError, Message: msg, FinishedAt: metav1.Now()}
	r.w.event(corev1.EventTypeWarning, "Failed", "Error: %s", msg)
	r.setTerminated(t)
	return exitInfo{terminated: t}
}

// cleanupInstance removes what an instance leaves on the host: runc's state if runc
// died before cleaning up, the root overlay and its upper layer.
func (r *containerRunner) cleanupInstance(ctx context.Context, id string, paths bundlePaths) {
	w := r.w
	if _, err := os.Stat(filepath.Join(w.m.runc.root, id)); err == nil {
		if err := w.m.runc.forceDelete(ctx, id); err != nil {
			w.log.Error(err, "Deleting runc container", "container", r.spec.Name)
		}
	}
	if err := unmount(paths.rootfs); err != nil {
		w.log.Error(err, "Unmounting container root", "container", r.spec.Name)
	}
	_ = os.RemoveAll(filepath.Dir(paths.upper))
	_ = os.Remove(paths.pidFile)
}

// exitCode is runc's exit status: the container's, or 128+signal when it was killed.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if code := exitErr.ExitCode(); code >= 0 {
			return code
		}
	}
	return 128 + 9
}

// terminationMessage reads what the container wrote to its termination-log file, or
// under FallbackToLogsOnError the tail of a failed container's log.
func terminationMessage(path string, policy corev1.TerminationMessagePolicy, logPath string, code int) string {
	data := make([]byte, maxTerminationMessage)
	n := 0
	if f, err := os.Open(path); err == nil {
		n, _ = io.ReadFull(f, data)
		f.Close()
	}
	msg := string(data[:n])
	if msg != "" || code == 0 || policy != corev1.TerminationMessageFallbackToLogsOnError {
		return msg
	}
	var b bytes.Buffer
	_ = writeLogs(context.Background(), logPath, logOptions{TailLines: fallbackLogLines}, &b, func() bool { return true })
	out := b.Bytes()
	if len(out) > fallbackLogBytes {
		out = out[len(out)-fallbackLogBytes:]
	}
	return string(out)
}
