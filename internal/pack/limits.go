package pack

import (
	"archive/tar"
	"fmt"
)

// Default caps of Unpack. A code archive is source, a few models and small data: far
// below both. A gzip of zeros grows about a thousandfold, so 20 MB of it would pass
// the byte cap well before it filled a node's disk.
const (
	DefaultMaxBytes   int64 = 4 << 30
	DefaultMaxEntries int64 = 200_000
)

// Limits caps what Unpack writes; a zero field takes its default.
type Limits struct {
	// MaxBytes bounds the sum of the regular files' sizes.
	MaxBytes int64
	// MaxEntries bounds the entries of every kind: files, directories and links.
	MaxEntries int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

// The caps a LimitError names.
const (
	CapBytes   = "bytes"
	CapEntries = "entries"
)

// LimitError is an archive that would unpack past a cap: Cap is CapBytes or
// CapEntries, Limit its value. Callers say how the cap is raised.
type LimitError struct {
	Cap   string
	Limit int64
}

func (e *LimitError) Error() string {
	if e.Cap == CapBytes {
		return fmt.Sprintf("the archive unpacks to more than %d bytes, the cap on unpacked bytes", e.Limit)
	}
	return fmt.Sprintf("the archive holds more than %d entries, the cap on entries", e.Limit)
}

// count adds hdr to what the archive has unpacked so far, refusing it past a cap. A
// header's size is what tar will read for it, so a bomb is refused before one byte of
// the entry is written.
func (u *unpacker) count(hdr *tar.Header) error {
	u.entries++
	if u.entries > u.lim.MaxEntries {
		return &LimitError{Cap: CapEntries, Limit: u.lim.MaxEntries}
	}
	if hdr.Typeflag == tar.TypeReg {
		if hdr.Size > u.lim.MaxBytes-u.bytes {
			return &LimitError{Cap: CapBytes, Limit: u.lim.MaxBytes}
		}
		u.bytes += hdr.Size
	}
	return nil
}
