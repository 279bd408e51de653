// Package procstop stops the servers tests start (the S3 server, the registry), each
// the leader of its own process group.
package procstop

import (
	"syscall"
	"time"
)

// Group sends SIGTERM to the process group led by pid, SIGKILL after grace if done has
// not closed by then, and returns once done closes (the leader was waited for).
func Group(pid int, done <-chan struct{}, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}
