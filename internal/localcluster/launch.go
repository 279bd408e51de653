package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// launcher starts the host's components of one Up call and waits for them. Each
// component's start function takes one, with the values it needs, rather than the
// whole starter: so a component reads alone, and its file tests alone.
type launcher struct {
	// opts name each component's binary, ports and time limit, and where progress goes.
	opts Options
	// run holds the components' pid files and logs.
	run string
	// started collects what this Up call started, as soon as it starts: a component
	// that fails after starting its process leaves it to Up to stop.
	started *proc.Group
}

// logf reports progress.
func (l launcher) logf(format string, args ...any) {
	fmt.Fprintf(l.opts.Progress, format+"\n", args...)
}

// ensureRunning adopts the component if it runs, unless restart asks to restart it;
// else it checks the component's ports and starts it. It reports whether it started it.
func (l launcher) ensureRunning(name string, args, env []string, restart bool) (*proc.Process, bool, error) {
	p := proc.FindDetached(l.run, name)
	if p != nil && !restart {
		l.logf("%s running (pid %d)", name, p.Pid())
		return p, false, nil
	}
	if p != nil {
		l.logf("restarting %s: its bridge or its settings changed", name)
		if err := p.Stop(defaultStopGrace(name)); err != nil {
			return nil, false, err
		}
	}
	if err := checkPorts(name, componentNamed(l.opts, name).endpoints); err != nil {
		return nil, false, err
	}
	bin := filepath.Join(l.opts.BinDir, componentNamed(l.opts, name).binary)
	p, err := proc.StartDetached(name, bin, args, env, l.run)
	if err != nil {
		return nil, false, err
	}
	l.started.Add(p)
	l.logf("%s started (pid %d), log %s", name, p.Pid(), p.LogPath())
	return p, true, nil
}

// ensureRunningWithArgs is ensureRunning that also restarts a running component whose
// flags differ from args.
func (l launcher) ensureRunningWithArgs(name string, args []string, restart bool) (*proc.Process, bool, error) {
	if running := proc.FindDetached(l.run, name); running != nil && !restart {
		same, err := runsWithArgs(running.Pid(), args)
		if err != nil {
			return nil, false, err
		}
		restart = !same
	}
	return l.ensureRunning(name, args, nil, restart)
}

// waitReady polls check until it succeeds, the process exits, or the timeout passes.
func (l launcher) waitReady(ctx context.Context, p *proc.Process, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	for {
		if p.Exited() {
			return fmt.Errorf("waiting for %s: %w", what, p.ExitError())
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			l.logf("%s: ready", what)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v); last lines of %s:\n%s",
				what, ctx.Err(), err, p.LogPath(), p.LogTail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startedOrRunning says, for progress messages, whether a component was started.
func startedOrRunning(started bool) string {
	if started {
		return "started"
	}
	return "running"
}

// httpOK gets url and wants 200 OK.
func httpOK(ctx context.Context, url string) error { return httpOKAs(ctx, url, "") }

// httpOKAs gets url with authorization as its Authorization header (none if empty)
// and wants 200 OK.
func httpOKAs(ctx context.Context, url, authorization string) error {
	return httpOKWith(ctx, http.DefaultClient, url, authorization)
}

// httpOKWith is httpOKAs through hc.
func httpOKWith(ctx context.Context, hc *http.Client, url, authorization string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{url: url, status: resp.Status, code: resp.StatusCode}
	}
	return nil
}

// statusError is an HTTP answer other than 200 OK.
type statusError struct {
	url, status string
	code        int
}

func (e *statusError) Error() string { return e.url + " answered " + e.status }
