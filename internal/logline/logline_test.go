package logline

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

type piece struct {
	Line string
	Cut  bool
}

func readAll(t *testing.T, r io.Reader, limit int) []piece {
	t.Helper()
	lr := NewReader(r, limit)
	var got []piece
	for {
		line, cut, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, piece{string(line), cut})
	}
}

// TestLinesAreSplitAtTheLimit: short lines come whole, a last line without newline
// too, and a longer line in pieces of the limit, never inside a character.
func TestLinesAreSplitAtTheLimit(t *testing.T) {
	long := strings.Repeat("a", 59) + "é" + strings.Repeat("b", 70) // é straddles byte 60
	for _, tc := range []struct {
		name, in string
		want     []piece
	}{
		{"short lines", "one\ntwo\r\n\nlast", []piece{{"one", false}, {"two\r", false}, {"", false}, {"last", false}}},
		{"empty", "", nil},
		{"split between characters", long + "\nnext\n", []piece{
			{strings.Repeat("a", 59), true}, {"é" + strings.Repeat("b", 59), true}, {strings.Repeat("b", 11), false}, {"next", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readAll(t, strings.NewReader(tc.in), 64)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pieces (-want +got):\n%s", diff)
			}
			for _, p := range got {
				if len(p.Line) > 64 || !utf8.ValidString(p.Line) {
					t.Errorf("piece %q: %d bytes, valid UTF-8 %v", p.Line, len(p.Line), utf8.ValidString(p.Line))
				}
			}
		})
	}
}

// endless is n bytes of 'x' without a newline, made as they are read.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	if e.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), e.n)
	for i := range k {
		p[i] = 'x'
	}
	e.n -= k
	return k, nil
}

// TestLongLineKeepsMemoryBounded: a 300 MB line without newline is read in pieces
// of at most Max bytes while the reader allocates less than a few pieces' worth.
func TestLongLineKeepsMemoryBounded(t *testing.T) {
	const size = 300 << 20
	lr := NewReader(&endless{n: size}, Max)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	total, pieces := 0, 0
	for {
		line, cut, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(line) > Max {
			t.Fatalf("piece %d: %d bytes, past %d", pieces, len(line), Max)
		}
		total += len(line)
		pieces++
		if !cut && total != size {
			t.Fatalf("piece %d ends the line after %d of %d bytes", pieces, total, size)
		}
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("300 MB line: %d pieces, %d KiB allocated while reading", pieces, allocated>>10)
	if total != size || pieces < size/Max {
		t.Errorf("read %d bytes in %d pieces, want %d in at least %d", total, pieces, size, size/Max)
	}
	if allocated > 1<<20 {
		t.Errorf("%d KiB allocated reading the line, want under 1 MiB", allocated>>10)
	}
}
