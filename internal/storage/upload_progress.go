package storage

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressBar draws an upload's progress on a terminal, at most ten times a second;
// on anything else it draws nothing.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	last  time.Time
	drawn bool
}

// newProgressBar returns a bar on w, or nil if w is not a terminal.
func newProgressBar(w io.Writer, label string) *progressBar {
	if !isTerminal(w) {
		return nil
	}
	return &progressBar{w: w, label: label}
}

// update is a ProgressFunc; a nil bar ignores it.
func (b *progressBar) update(done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now(); now.Sub(b.last) >= 100*time.Millisecond || done == total {
		b.last = now
		b.drawn = true
		fmt.Fprintf(b.w, "\r%s %s", b.label, renderBar(done, total, 30))
	}
}

// finish ends the bar's line.
func (b *progressBar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}

// renderBar renders "[=====>    ]  45% 4.5 MiB/10.0 MiB" in width characters of bar.
func renderBar(done, total int64, width int) string {
	if total <= 0 {
		return FormatBytes(done)
	}
	done = min(done, total)
	filled := int(int64(width) * done / total)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("[%s] %3d%% %s/%s", bar, 100*done/total, FormatBytes(done), FormatBytes(total))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// FormatBytes renders every size a user reads, as "512 B", "4.1 KiB", "1.0 GiB".
// Binary units agree with the Mi and Gi of the Kubernetes quantities beside them.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
