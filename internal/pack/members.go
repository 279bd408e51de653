package pack

import (
	"io"

	"github.com/klauspost/compress"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/pgzip"
)

// The archive is a series of gzip members, which every gzip reader reads as one stream
// (RFC 1952, section 2.2): runs of files that compress go through deflate, and runs of
// files that do not (model weights, checkpoints, images, archives) are stored as they
// are, since deflating them costs as much CPU as hashing and saves nothing. A member
// ends only where the run changes, so a source tree is one member.
const (
	// compression trades a little size for speed: code archives are small.
	compression = gzip.BestSpeed
	// incompressible is the compressibility estimate below which a file is stored.
	incompressible = 0.1
	// sampleSize is how much of a file the estimate reads.
	sampleSize = 1 << 10
	// minSwitchSize is the smallest file that may start a member of its own kind:
	// smaller ones join the current member, whatever it is.
	minSwitchSize = 2 << 10
)

// Compression of compressible members runs on every core: they are cut into blocks of
// compressBlock bytes, each compressed with the end of the one before as its
// dictionary, so the output depends on the block size and not on the number of cores.
// compressBlocks blocks are in flight at once.
const (
	compressBlock  = 1 << 20
	compressBlocks = 8
)

// memberWriter writes gzip members to w, deflating or storing.
type memberWriter struct {
	w       io.Writer
	deflate *pgzip.Writer
	store   *gzip.Writer
	// current is the open member's writer, nil before the first.
	current io.WriteCloser
}

func newMemberWriter(w io.Writer) (*memberWriter, error) {
	deflate, err := pgzip.NewWriterLevel(w, compression)
	if err != nil {
		return nil, err
	}
	if err := deflate.SetConcurrency(compressBlock, compressBlocks); err != nil {
		return nil, err
	}
	store, err := gzip.NewWriterLevel(w, gzip.NoCompression)
	if err != nil {
		return nil, err
	}
	return &memberWriter{w: w, deflate: deflate, store: store}, nil
}

// startFile prepares for a file of size bytes that starts with sample: if the file
// compresses differently from the open member, and is large enough to matter, the
// member ends and one of the other kind starts.
func (m *memberWriter) startFile(sample []byte, size int64) error {
	if size < minSwitchSize && m.current != nil {
		return nil
	}
	var want io.WriteCloser = m.deflate
	if compress.Estimate(sample) < incompressible {
		want = m.store
	}
	return m.switchTo(want)
}

func (m *memberWriter) switchTo(want io.WriteCloser) error {
	if m.current == want {
		return nil
	}
	if m.current != nil {
		if err := m.current.Close(); err != nil {
			return err
		}
	}
	switch want {
	case m.deflate:
		m.deflate.Reset(m.w)
		if err := m.deflate.SetConcurrency(compressBlock, compressBlocks); err != nil {
			return err
		}
	case m.store:
		m.store.Reset(m.w)
	}
	m.current = want
	return nil
}

func (m *memberWriter) Write(p []byte) (int, error) {
	if m.current == nil {
		if err := m.switchTo(m.deflate); err != nil {
			return 0, err
		}
	}
	return m.current.Write(p)
}

// Close ends the last member; an archive with no member gets an empty one.
func (m *memberWriter) Close() error {
	if m.current == nil {
		if err := m.switchTo(m.deflate); err != nil {
			return err
		}
	}
	return m.current.Close()
}
