package agent

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// reaper waits for every child of the agent. The agent is a child subreaper (and in a
// container often PID 1), so the processes the command leaves behind when their parent
// exits (a daemon that forked twice, a shell's background job) become its children:
// the reaper collects their exit statuses, so that none stays a zombie, and picks out
// the command's own.
type reaper struct {
	// mu is held while the command starts and during each round of waits, so that
	// the command's status is never collected before its pid is known.
	mu     sync.Mutex
	main   int
	status chan syscall.WaitStatus // the command's, once
	// watched are the other children the agent started whose status it wants, by
	// pid: a wait of the reaper's collects it before exec.Cmd.Wait could.
	watched map[int]chan syscall.WaitStatus
	sigchld chan os.Signal
	stop    chan struct{}
	stopped chan struct{}
}

// startReaper makes the agent a child subreaper and starts reaping. A failure to become
// one is returned but not fatal: the command's own process group is still ended.
func startReaper() (*reaper, error) {
	r := &reaper{
		status:  make(chan syscall.WaitStatus, 1),
		watched: map[int]chan syscall.WaitStatus{},
		sigchld: make(chan os.Signal, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	signal.Notify(r.sigchld, syscall.SIGCHLD)
	go r.loop()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return r, os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", errno)
	}
	return r, nil
}

// loop reaps on every SIGCHLD, and every second in case one was merged with another.
func (r *reaper) loop() {
	defer close(r.stopped)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.reapAll()
		select {
		case <-r.sigchld:
		case <-tick.C:
		case <-r.stop:
			return
		}
	}
}

// reapAll collects every child that has exited.
func (r *reaper) reapAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid == r.main {
			r.status <- ws
		}
		if ch, ok := r.watched[pid]; ok {
			delete(r.watched, pid)
			ch <- ws
		}
	}
}

// start starts cmd as the command whose status the reaper reports.
func (r *reaper) start(cmd *exec.Cmd) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.main = cmd.Process.Pid
	return nil
}

// startWatched starts cmd, another child than the command, and returns where its
// status arrives once it has exited.
func (r *reaper) startWatched(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.watched[cmd.Process.Pid] = ch
	return ch, nil
}

// close stops reaping.
func (r *reaper) close() {
	signal.Stop(r.sigchld)
	close(r.stop)
	<-r.stopped
}

// process is a live process of the agent's tree.
type process struct {
	pid, pgid int
	name      string
}

func (p process) String() string { return p.name + " (pid " + strconv.Itoa(p.pid) + ")" }

// descendants lists the live processes below pid (zombies excluded: they are gone but
// for their status, which their parent or the reaper collects), from /proc.
func descendants(pid int) []process {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]process{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgid, _ := strconv.Atoi(fields[2])
		children[ppid] = append(children[ppid], process{pid: p, pgid: pgid, name: s[open+1 : end]})
	}
	var out []process
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// killRounds bounds the SIGKILL rounds for processes that keep forking.
const killRounds = 3

// endLeftovers ends what the command left running once it exited: SIGTERM to its
// process group and to every process below the agent, then, for those still there
// after grace, SIGKILL. It returns the processes that survived (none, unless one is
// stuck in the kernel).
func endLeftovers(pgid int, grace time.Duration, log *logger) []process {
	self := os.Getpid()
	left := descendants(self)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if len(left) == 0 {
		return nil
	}
	log.Printf("the command left %d processes running: %s: sending SIGTERM, SIGKILL after %v", len(left), processList(left), grace)
	for _, p := range left {
		if p.pgid != pgid { // the group has had its SIGTERM: one each
			_ = syscall.Kill(p.pid, syscall.SIGTERM)
		}
	}
	if left = waitGone(self, grace); len(left) == 0 {
		return nil
	}
	for range killRounds {
		log.Printf("killing %s", processList(left))
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		for _, p := range left {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		if left = waitGone(self, 2*time.Second); len(left) == 0 {
			return nil
		}
	}
	log.Printf("processes still running after SIGKILL: %s", processList(left))
	return left
}

// waitGone waits up to timeout for the processes below pid to be gone, and returns
// those still there.
func waitGone(pid int, timeout time.Duration) []process {
	deadline := time.Now().Add(timeout)
	for {
		left := descendants(pid)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processList renders processes for the log, the first few by name.
func processList(ps []process) string {
	names := make([]string, 0, min(len(ps), 5))
	for _, p := range ps[:min(len(ps), 5)] {
		names = append(names, p.String())
	}
	if len(ps) > 5 {
		names = append(names, "...")
	}
	return strings.Join(names, ", ")
}
