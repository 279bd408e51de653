package agent

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The agent holds the storage credentials; the command, which runs as the same user in
// the same container, must not read them. The kubelet put them in the agent's
// environment, and the agent keeps them in its memory, so:
//
//   - their values are erased from the agent's environment block, which
//     /proc/<agent>/environ shows: the kernel lets a process of the same user read it
//     even from a process that is not dumpable (Linux 6.18 does);
//   - the agent is not dumpable: /proc/<agent>/mem, ptrace and process_vm_readv are
//     refused to a process of the same user unless it holds CAP_SYS_PTRACE;
//   - the command starts without CAP_SYS_PTRACE: out of its bounding set, so that
//     neither root nor a binary with file capabilities gains it, and out of its
//     inheritable and ambient sets.
//
// A command with CAP_SYS_ADMIN, CAP_SYS_RAWIO, CAP_SYS_MODULE, CAP_BPF or CAP_PERFMON (a
// privileged container) can read any memory by other means; the agent warns of them
// rather than dropping them, as such a container was granted them on purpose.

// protectMemory erases the storage credentials from the agent's environment block and
// makes its memory unreadable to the processes of its user that lack CAP_SYS_PTRACE.
func protectMemory() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return eraseStorageEnviron()
}

// eraseStorageEnviron overwrites with NULs the values of the storage settings in the
// agent's environment block, the memory that /proc/<agent>/environ reads. The Go
// runtime copied the environment when the agent started: nothing reads the block
// since.
func eraseStorageEnviron() error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// Fields 50 and 51 are env_start and env_end; the name before them may hold spaces.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 49 {
		return fmt.Errorf("/proc/self/stat has %d fields after the name, want 49", len(fields))
	}
	start, err := strconv.ParseInt(fields[47], 10, 64)
	if err != nil {
		return fmt.Errorf("parsing env_start in /proc/self/stat: %w", err)
	}
	block, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	off := 0
	for entry := range bytes.SplitSeq(block, []byte{0}) {
		name, value, _ := bytes.Cut(entry, []byte("="))
		if isStorageEnv(string(name)) && len(value) > 0 {
			if _, err := mem.WriteAt(make([]byte, len(value)), start+int64(off+len(name)+1)); err != nil {
				return fmt.Errorf("erasing %s from the environment block: %w", name, err)
			}
		}
		off += len(entry) + 1
	}
	return nil
}

// memoryReaders are the capabilities other than CAP_SYS_PTRACE that read another
// process's memory: through BPF, perf, /dev/mem or a kernel module.
var memoryReaders = []struct {
	bit  uintptr
	name string
}{
	{unix.CAP_SYS_MODULE, "CAP_SYS_MODULE"},
	{unix.CAP_SYS_RAWIO, "CAP_SYS_RAWIO"},
	{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	{unix.CAP_PERFMON, "CAP_PERFMON"},
	{unix.CAP_BPF, "CAP_BPF"},
}

// confinement is what starting the command without CAP_SYS_PTRACE found.
type confinement struct {
	// dropped is true when the container granted CAP_SYS_PTRACE and the command was
	// started without it.
	dropped bool
	// kept is why the container's CAP_SYS_PTRACE could not be dropped; nil if it was,
	// or was not granted.
	kept error
	// readers are the memoryReaders the command may hold.
	readers []string
}

// messages are the log lines that say what the command may still do, none when the
// credentials are out of its reach and nothing was taken from it.
func (c confinement) messages() []string {
	var out []string
	if c.dropped {
		out = append(out, "the command runs without the container's CAP_SYS_PTRACE, with which it could read the storage "+
			"credentials from the agent's memory (expose the credentials to the command to keep it)")
	}
	if c.kept != nil {
		out = append(out, fmt.Sprintf("warning: the command may hold CAP_SYS_PTRACE (%v): "+
			"it can read the storage credentials from the agent's memory", c.kept))
	}
	if len(c.readers) > 0 {
		out = append(out, fmt.Sprintf("warning: the command may hold %s (a privileged container?): "+
			"it can read the storage credentials from the agent's memory", strings.Join(c.readers, ", ")))
	}
	return out
}

// startConfined starts cmd with start from an OS thread of its own whose capability
// sets lack CAP_SYS_PTRACE: the sets are per thread, and a child inherits those of the
// thread that forked it. The thread lives until exited is closed, since the command's
// Pdeathsig fires when the thread that started it ends.
func startConfined(start func(*exec.Cmd) error, cmd *exec.Cmd, exited <-chan struct{}) (confinement, error) {
	type result struct {
		conf confinement
		err  error
	}
	started := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, its capabilities changed, ends with this goroutine.
		runtime.LockOSThread()
		conf := dropPtrace()
		err := start(cmd)
		started <- result{conf, err}
		if err == nil {
			<-exited
		}
	}()
	r := <-started
	return r.conf, r.err
}

// dropPtrace takes CAP_SYS_PTRACE out of the calling thread's bounding and inheritable
// sets (the ambient set follows the inheritable one), and reports what the thread's
// children may still hold.
func dropPtrace() confinement {
	var c confinement
	if inBoundingSet(unix.CAP_SYS_PTRACE) {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0); err != nil {
			c.kept = fmt.Errorf("dropping it from the bounding set: %w", err)
		} else {
			c.dropped = true
		}
	}
	if err := dropInheritable(unix.CAP_SYS_PTRACE); err != nil && c.kept == nil {
		c.kept = fmt.Errorf("dropping it from the inheritable set: %w", err)
	}
	for _, r := range memoryReaders {
		if inBoundingSet(r.bit) {
			c.readers = append(c.readers, r.name)
		}
	}
	return c
}

// inBoundingSet reports whether the calling thread's bounding set holds capability
// bit; one the kernel does not know is not held.
func inBoundingSet(bit uintptr) bool {
	held, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, bit, 0, 0, 0)
	return err == nil && held == 1
}

// dropInheritable removes capability bit from the calling thread's inheritable set.
func dropInheritable(bit uint) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	word, mask := bit/32, uint32(1)<<(bit%32)
	if data[word].Inheritable&mask == 0 {
		return nil
	}
	data[word].Inheritable &^= mask
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
