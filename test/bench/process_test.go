package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// The controller as a process of its own, and the CPU time of every process.

// controllerProcess is bin/tfk8s-controller running against the control plane.
type controllerProcess struct {
	cmd *exec.Cmd
	// pprofAddr serves the controller's profiles, when TFK8S_BENCH_PPROF asks for them.
	pprofAddr string
}

// startControllerProcess runs bin/tfk8s-controller on cp with env added to the
// benchmark's environment and args after the benchmark's flags (a later flag wins).
func startControllerProcess(cp *controlplane.ControlPlane, env []string, args ...string) (*controllerProcess, error) {
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "tfk8s-controller"),
		"--kubeconfig="+cp.Kubeconfig(), "--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--pod-create-concurrency=%d", creators), "--zap-log-level=error")
	// TFK8S_BENCH_CONTROLLER_ARGS adds flags, e.g. "--zap-log-level=2" to trace reconciles.
	cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("TFK8S_BENCH_CONTROLLER_ARGS"))...)
	cmd.Args = append(cmd.Args, args...)
	cmd.Env = append(os.Environ(), env...)
	var pprofAddr string
	if os.Getenv("TFK8S_BENCH_PPROF") != "" {
		ports, err := proc.FreePorts(1)
		if err != nil {
			return nil, err
		}
		pprofAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
		cmd.Args = append(cmd.Args, "--pprof-bind-address="+pprofAddr)
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting tfk8s-controller (run make build): %w", err)
	}
	return &controllerProcess{cmd: cmd, pprofAddr: pprofAddr}, nil
}

// peakRSS is the controller's high-water mark of resident memory, in bytes.
func (p *controllerProcess) peakRSS() int64 {
	return processPeakRSS(p.cmd.Process.Pid)
}

// processPeakRSS is a running process's high-water mark of resident memory, in bytes;
// -1 once it has gone.
func processPeakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func (p *controllerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// cpuSeconds returns the CPU time used so far by this machine's control plane processes,
// tfk8s-controller and this benchmark, by command name.
func cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// comm is in parentheses; utime and stime are fields 14 and 15.
		end := strings.LastIndexByte(string(stat), ')')
		start := strings.IndexByte(string(stat), '(')
		if start < 0 || end < 0 {
			continue
		}
		comm := string(stat[start+1 : end])
		switch {
		case strings.HasPrefix(comm, "kube-"), comm == "etcd", comm == "tfk8s-controlle", pid == os.Getpid():
		default:
			continue
		}
		fields := strings.Fields(string(stat[end+2:]))
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		if pid == os.Getpid() {
			comm = "bench"
		}
		out[comm] += (utime + stime) / 100 // clock ticks
	}
	return out
}

func cpuDelta(before, after map[string]float64) string {
	var parts []string
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller", "tfk8s-controlle", "bench"} {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, after[name]-before[name]))
	}
	return strings.Join(parts, ", ")
}
