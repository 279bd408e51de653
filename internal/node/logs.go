package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Container logs are kept in the CRI format the kubelet reads: one record per line,
// "<RFC3339Nano time> <stdout|stderr> <F|P> <content>", P marking a piece of a line too
// long for one record.
const (
	maxLogRecord = 16 * 1024
	tagFull      = 'F'
	tagPartial   = 'P'
	// followPoll is how often a followed log is checked for more output.
	followPoll = 100 * time.Millisecond
)

// logFile receives a container's stdout and stderr.
type logFile struct {
	mu  sync.Mutex
	f   *os.File
	now func() time.Time
}

// createLogFile opens path for appending container output.
func createLogFile(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("creating log file: %w", err)
	}
	return &logFile{f: f, now: time.Now}, nil
}

// copyStream writes the lines read from r as records of the named stream until r ends.
func (l *logFile) copyStream(r io.Reader, stream string) {
	br := bufio.NewReaderSize(r, maxLogRecord)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			tag := byte(tagFull)
			if isPrefix {
				tag = tagPartial
			}
			l.writeRecord(stream, tag, line)
		}
		if err != nil {
			return
		}
	}
}

// writeRecord appends one record in a single write, so a reader never sees half of one
// once the write has returned.
func (l *logFile) writeRecord(stream string, tag byte, content []byte) {
	var b bytes.Buffer
	b.Grow(len(content) + 64)
	b.WriteString(l.now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteByte(tag)
	b.WriteByte(' ')
	b.Write(content)
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(b.Bytes())
}

// Close closes the file.
func (l *logFile) Close() error { return l.f.Close() }

// logRecord is one parsed record.
type logRecord struct {
	time    time.Time
	stream  string
	partial bool
	content []byte
}

// parseLogRecord reads one record without its newline.
func parseLogRecord(line []byte) (logRecord, error) {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return logRecord{}, fmt.Errorf("log record %q has no stream", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return logRecord{}, fmt.Errorf("parsing log record time: %w", err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return logRecord{}, fmt.Errorf("log record %q has no tag", line)
	}
	tag, content, _ := bytes.Cut(rest, []byte{' '})
	return logRecord{time: t, stream: string(stream), partial: len(tag) == 1 && tag[0] == tagPartial, content: content}, nil
}

// logOptions are the kubelet log API's query parameters.
type logOptions struct {
	Follow     bool
	Timestamps bool
	// TailLines, when not negative, starts that many lines from the end.
	TailLines int64
	// SinceTime skips lines written before it.
	SinceTime time.Time
	// LimitBytes, when positive, stops after that many bytes of output.
	LimitBytes int64
}

// errLimitReached ends output at LimitBytes.
var errLimitReached = errors.New("log byte limit reached")

// writeLogs copies a log file's content to w as the user sees it. With Follow it keeps
// copying what is appended until finished reports that the container has exited (and
// its output has been drained) or ctx ends.
func writeLogs(ctx context.Context, path string, opts logOptions, w io.Writer, finished func() bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening log file: %w", err)
	}
	defer f.Close()
	if opts.TailLines >= 0 {
		start, err := tailOffset(f, opts.TailLines)
		if err != nil {
			return err
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("seeking in log file: %w", err)
		}
	}
	out := w
	if opts.LimitBytes > 0 {
		out = &limitWriter{w: w, left: opts.LimitBytes}
	}
	flush := func() {
		if fl, ok := w.(interface{ Flush() }); ok {
			fl.Flush()
		}
	}
	r := bufio.NewReader(f)
	var pending []byte // a record read before its writer finished it
	lineStart := true  // the next content begins a line (for timestamps)
	for {
		done := !opts.Follow || finished()
		for {
			chunk, err := r.ReadBytes('\n')
			pending = append(pending, chunk...)
			if err != nil {
				break
			}
			rec, perr := parseLogRecord(bytes.TrimSuffix(pending, []byte{'\n'}))
			pending = pending[:0]
			if perr != nil || rec.time.Before(opts.SinceTime) {
				continue
			}
			if werr := writeRecordTo(out, rec, opts.Timestamps, lineStart); werr != nil {
				if errors.Is(werr, errLimitReached) {
					return nil
				}
				return werr
			}
			lineStart = !rec.partial
		}
		flush()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// writeRecordTo writes one record's content, its line ending if complete, and the
// record's time first when asked and the record begins a line.
func writeRecordTo(w io.Writer, rec logRecord, timestamps, lineStart bool) error {
	var b bytes.Buffer
	if timestamps && lineStart {
		b.WriteString(rec.time.Format(time.RFC3339Nano))
		b.WriteByte(' ')
	}
	b.Write(rec.content)
	if !rec.partial {
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

// tailOffset returns where the last n complete lines of a log file begin.
func tailOffset(f *os.File, n int64) (int64, error) {
	if n == 0 {
		end, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			return 0, fmt.Errorf("seeking in log file: %w", err)
		}
		return end, nil
	}
	// starts holds the offsets at which the last n+1 lines begin, as a ring.
	starts := make([]int64, n+1)
	var count, offset int64
	lineStart := int64(0)
	r := bufio.NewReader(f)
	for {
		rec, err := r.ReadBytes('\n')
		if len(rec) > 0 && rec[len(rec)-1] == '\n' {
			offset += int64(len(rec))
			if parsed, perr := parseLogRecord(rec[:len(rec)-1]); perr == nil && !parsed.partial {
				starts[count%(n+1)] = lineStart
				count++
				lineStart = offset
			}
		}
		if err != nil {
			break
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, fmt.Errorf("seeking in log file: %w", err)
	}
	if count <= n {
		return 0, nil
	}
	return starts[(count-n)%(n+1)], nil
}

// limitWriter fails with errLimitReached once left bytes have been written.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimitReached
	}
	if int64(len(p)) > l.left {
		n, err := l.w.Write(p[:l.left])
		l.left -= int64(n)
		if err == nil {
			err = errLimitReached
		}
		return n, err
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}
