package agent

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// logger writes the agent's own messages, prefixed "tfk8s-agent:", to its stderr and to
// the log file, so that the uploaded log tells what the agent did around the command.
type logger struct {
	mu  sync.Mutex
	out io.Writer
}

// Printf writes one message line.
func (l *logger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "tfk8s-agent: %s %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// teeWriter writes to every writer, ignoring the errors of each: a closed stdout must
// not stop the log file, nor the command.
type teeWriter []io.Writer

// Write writes p to every writer and reports it all written.
func (t teeWriter) Write(p []byte) (int, error) {
	for _, w := range t {
		_, _ = w.Write(p)
	}
	return len(p), nil
}
