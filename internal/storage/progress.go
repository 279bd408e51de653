package storage

import (
	"sync"
)

// ProgressFunc is told how many bytes of an upload have been sent out of total (-1 when
// unknown). Calls are serialised. After a retry, done starts again from 0.
type ProgressFunc func(done, total int64)

// progressReader is the io.Reader minio-go reads to report progress: every Read of it
// stands for len(p) more bytes sent. Parallel part uploads call it concurrently.
type progressReader struct {
	mu    sync.Mutex
	done  int64
	total int64
	fn    ProgressFunc
}

// newProgressReader returns nil when fn is nil, which minio-go takes as "no progress".
func newProgressReader(fn ProgressFunc, total int64) *progressReader {
	if fn == nil {
		return nil
	}
	return &progressReader{fn: fn, total: total}
}

// Read counts len(p) bytes as sent.
func (p *progressReader) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(len(b))
	p.fn(p.done, p.total)
	return len(b), nil
}

// reset starts counting from 0 again, before a retry.
func (p *progressReader) reset() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = 0
	p.fn(0, p.total)
}
