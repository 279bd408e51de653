// Command pause is the process of a pod's sandbox container, as Kubernetes' pause.c is:
// it holds the pod's namespaces open, reaps the orphans the kernel hands it as the
// pod's PID 1, and exits 0 on SIGINT or SIGTERM. make pause-image packs it as the
// sandbox image containerd runs by default, so that local mode pulls no image from the
// internet.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A SIGCHLD dropped because the channel is full loses no child: the reap that the
	// pending one starts collects every child that has exited.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
		os.Exit(0)
	}
}

// reap waits for every child that has exited, so that none stays a zombie.
func reap() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
