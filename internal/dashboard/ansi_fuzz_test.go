package dashboard

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// ansiClass is every class ansiSegments may give a segment: bold, then a foreground,
// then a background colour, each optional, all from static/dashboard.css.
var ansiClass = regexp.MustCompile(`^(ansi-bold)?( ?ansi-fg-(3[0-7]|9[0-7]))?( ?ansi-bg-(4[0-7]|10[0-7]))?$`)

// FuzzANSISegments: whatever a log line holds, ansiSegments returns no more text than
// the line had, none of it an escape byte, each segment non-empty with a known class;
// valid UTF-8 stays valid; a line without ESC comes back whole.
func FuzzANSISegments(f *testing.F) {
	for _, s := range []string{
		"plain text",
		"\x1b[1;31mred bold\x1b[0m normal",
		"\x1b[38;5;196mskipped 256\x1b[48;2;1;2;3m rgb\x1b[39;49m",
		"\x1b[2Kerase \x1b]0;title\x07 osc",
		"\x1b[", "\x1b", "\x1b[31", "\x1b[1;\xffm", "日本\x1b[92m語",
		"\x1b[38;5m\x1b[38;2;1m\x1b[;;;m\x1b[0;1;22;97;107m",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		segs := ansiSegments(line)
		var text strings.Builder
		for _, s := range segs {
			if s.Text == "" {
				t.Errorf("an empty segment: %q", segs)
			}
			if !ansiClass.MatchString(s.Class) {
				t.Errorf("class %q is no ANSI class of the stylesheet", s.Class)
			}
			text.WriteString(s.Text)
		}
		out := text.String()
		if len(out) > len(line) || len(segs) > len(line) {
			t.Errorf("%d bytes in %d segments out of a %d-byte line", len(out), len(segs), len(line))
		}
		if strings.IndexByte(out, 0x1b) >= 0 {
			t.Errorf("an escape byte is left in %q", out)
		}
		if utf8.ValidString(line) && !utf8.ValidString(out) {
			t.Errorf("valid UTF-8 %q came out invalid: %q", line, out)
		}
		if strings.IndexByte(line, 0x1b) < 0 && out != line {
			t.Errorf("a line without escapes came out as %q", out)
		}
	})
}
