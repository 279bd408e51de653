package node

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeTestLog writes stdout lines a.. with times one second apart from t0, plus a line
// too long for one record.
func writeTestLog(t *testing.T, t0 time.Time) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	lf, err := createLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	lf.now = func() time.Time { i++; return t0.Add(time.Duration(i) * time.Second) }
	long := strings.Repeat("x", maxLogRecord+10)
	lf.copyStream(strings.NewReader("a\nb\n\nc\n"+long+"\nd"), "stdout")
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	return path, long
}

func TestWriteLogs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	path, long := writeTestLog(t, t0)
	cases := []struct {
		name string
		opts logOptions
		want string
	}{
		{name: "all", opts: logOptions{TailLines: -1}, want: "a\nb\n\nc\n" + long + "\nd\n"},
		{name: "tail 2 counts a long line once", opts: logOptions{TailLines: 2}, want: long + "\nd\n"},
		{name: "tail 0", opts: logOptions{TailLines: 0}, want: ""},
		{name: "tail more than there are", opts: logOptions{TailLines: 100}, want: "a\nb\n\nc\n" + long + "\nd\n"},
		{name: "timestamps", opts: logOptions{TailLines: 3, Timestamps: true}, want: "2026-01-01T00:00:04Z c\n2026-01-01T00:00:05Z " + long + "\n2026-01-01T00:00:07Z d\n"},
		{name: "since", opts: logOptions{TailLines: -1, SinceTime: t0.Add(3 * time.Second)}, want: "\nc\n" + long + "\nd\n"},
		{name: "limit bytes", opts: logOptions{TailLines: -1, LimitBytes: 5}, want: "a\nb\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeLogs(context.Background(), path, tc.opts, &b, func() bool { return true }); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tc.want {
				t.Errorf("got %q, want %q", shorten(got), shorten(tc.want))
			}
		})
	}
}

func shorten(s string) string {
	return strings.ReplaceAll(s, strings.Repeat("x", maxLogRecord), "x…")
}

func TestWriteLogsFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	lf, err := createLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var finished atomic.Bool
	go func() {
		lf.writeRecord("stdout", tagFull, []byte("one"))
		time.Sleep(3 * followPoll)
		lf.writeRecord("stderr", tagFull, []byte("two"))
		finished.Store(true)
	}()
	var b bytes.Buffer // written and read by this goroutine only
	start := time.Now()
	if err := writeLogs(context.Background(), path, logOptions{Follow: true, TailLines: -1}, &b, finished.Load); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "one\ntwo\n" {
		t.Errorf("followed %q, want both lines", got)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("follow took %s", time.Since(start))
	}
}
