// Package logline reads a log line by line with a bound on the length of a line, so
// that a reader of logs holds at most Max bytes however long a line its source
// writes: a longer line comes in pieces, each marked as continuing.
package logline

import (
	"bufio"
	"errors"
	"io"
	"unicode/utf8"
)

// Max is the longest line, in bytes, a log reader of tfk8s holds: 64 KiB.
const Max = 64 << 10

// Mark ends each piece of a line that was split at Max and continues on the next
// line, so that a reader sees where tfk8s split it.
const Mark = " [line continues]"

// Reader reads lines of at most a given length.
type Reader struct {
	br   *bufio.Reader
	line []byte
	// rest holds the bytes of a character cut at the end of the last piece, which
	// start the next one.
	rest  [utf8.UTFMax]byte
	nrest int
	err   error
}

// NewReader reads r in lines of at most limit bytes (at least 64).
func NewReader(r io.Reader, limit int) *Reader {
	limit = max(limit, 64)
	// The buffer leaves room for the bytes of a character carried over.
	return &Reader{br: bufio.NewReaderSize(r, limit-utf8.UTFMax), line: make([]byte, 0, limit)}
}

// Next returns the next line without its "\n", valid until the next call. A line
// longer than the limit comes in pieces, split between characters: cut is true for
// each piece but the last. At the end of the input Next returns its last line
// without "\n", if any, then the error that ended it (io.EOF at the end).
func (r *Reader) Next() (line []byte, cut bool, err error) {
	if r.err != nil {
		return nil, false, r.err
	}
	r.line = append(r.line[:0], r.rest[:r.nrest]...)
	r.nrest = 0
	chunk, err := r.br.ReadSlice('\n')
	r.line = append(r.line, chunk...)
	switch {
	case err == nil:
		return r.line[:len(r.line)-1], false, nil
	case errors.Is(err, bufio.ErrBufferFull):
		keep := cutRune(r.line)
		r.nrest = copy(r.rest[:], r.line[len(r.line)-keep:])
		return r.line[:len(r.line)-keep], true, nil
	}
	r.err = err
	if len(r.line) > 0 {
		return r.line, false, nil
	}
	return nil, false, err
}

// Buffered is how many bytes of the input are read and not yet returned: 0 when
// the next call to Next would wait for the input.
func (r *Reader) Buffered() int { return r.br.Buffered() + r.nrest }

// cutRune counts the bytes at the end of b that start a character b does not hold
// whole.
func cutRune(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if utf8.FullRune(b[len(b)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
