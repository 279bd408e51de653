package controlplane

import (
	"path/filepath"
	"time"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// stopGrace is how long a component has to stop after SIGTERM, before SIGKILL.
const stopGrace = 10 * time.Second

// start starts the component name from binDir. A detached control plane adopts the
// component instead if its pid file names a live process, and starts it detached if
// not.
func (cp *ControlPlane) start(name, binDir string, args []string) (*proc.Process, error) {
	bin := filepath.Join(binDir, name)
	if !cp.detach {
		p, err := proc.Start(name, bin, args, cp.Dir, proc.Options{Dir: cp.Dir, OwnGroup: true})
		if err != nil {
			return nil, err
		}
		cp.procs.Add(p)
		return p, nil
	}
	if p := proc.FindDetached(cp.Dir, name); p != nil {
		cp.procs.Adopt(p)
		return p, nil
	}
	p, err := proc.StartDetached(name, bin, args, nil, cp.Dir)
	if err != nil {
		return nil, err
	}
	cp.procs.Add(p)
	return p, nil
}

// stopStarted stops the processes this control plane started, newest first, and
// leaves the ones it adopted running: a failed restart of one component must not
// take down the rest of a running local cluster.
func (cp *ControlPlane) stopStarted() {
	cp.procs.StopStarted(func(string) time.Duration { return stopGrace })
}

// startedOrRunning says, for progress messages, whether p was started or found running.
func (cp *ControlPlane) startedOrRunning(p *proc.Process) string {
	if cp.procs.Adopted(p.Name()) {
		return "running"
	}
	return "started"
}

// Adopted reports whether the component name was found running rather than started
// by Start; only a detached control plane adopts.
func (cp *ControlPlane) Adopted(name string) bool { return cp.procs.Adopted(name) }

// Process is the component name, started or adopted by Start, or nil.
func (cp *ControlPlane) Process(name string) *proc.Process { return cp.procs.Find(name) }

// Check returns an error naming the first process that has exited.
func (cp *ControlPlane) Check() error { return cp.procs.Check() }
