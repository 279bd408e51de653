package dashboard

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// ansiSegment is a run of log text with the same ANSI attributes, named as CSS
// classes (static/dashboard.css colours them). The browser puts Text in a span as
// text, never as HTML, so a log line cannot inject markup.
type ansiSegment struct {
	Class string `json:"class,omitempty"`
	Text  string `json:"text"`
}

// ansiState is the SGR attributes in force.
type ansiState struct {
	fg, bg string
	bold   bool
}

func (st ansiState) class() string {
	var c []string
	if st.bold {
		c = append(c, "ansi-bold")
	}
	if st.fg != "" {
		c = append(c, "ansi-fg-"+st.fg)
	}
	if st.bg != "" {
		c = append(c, "ansi-bg-"+st.bg)
	}
	return strings.Join(c, " ")
}

// ansiSegments splits a line at its ANSI escape sequences: SGR colours and bold
// become classes, every other sequence is dropped.
func ansiSegments(line string) []ansiSegment {
	var segs []ansiSegment
	var st ansiState
	var text strings.Builder
	text.Grow(len(line)) // one allocation, not a doubling per 64 KiB line
	flush := func() {
		if text.Len() > 0 {
			segs = append(segs, ansiSegment{Class: st.class(), Text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(line); {
		if line[i] != 0x1b {
			text.WriteByte(line[i])
			i++
			continue
		}
		params, final, n := parseEscape(line[i:])
		i += n
		if final == 'm' {
			flush()
			st = st.apply(params)
		}
	}
	flush()
	if segs == nil {
		segs = []ansiSegment{}
	}
	return segs
}

// parseEscape reads the escape sequence at the start of s (ESC [ params final, or
// ESC and one ASCII byte) and returns its parameters, its final byte and its length.
// A lone ESC before a non-ASCII byte is dropped alone, so that no character is split.
func parseEscape(s string) (string, byte, int) {
	if len(s) < 2 || s[1] >= utf8.RuneSelf {
		return "", 0, 1
	}
	if s[1] != '[' {
		return "", 0, 2
	}
	for j := 2; j < len(s); j++ {
		if c := s[j]; c >= 0x40 && c <= 0x7e {
			return s[2:j], c, j + 1
		}
	}
	return "", 0, len(s)
}

// apply applies the SGR parameters "1;31" and the like; 256-colour and RGB colours
// are skipped, keeping the default.
func (st ansiState) apply(params string) ansiState {
	if params == "" {
		return ansiState{}
	}
	codes := strings.Split(params, ";")
	for k := 0; k < len(codes); k++ {
		n, err := strconv.Atoi(codes[k])
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			st = ansiState{}
		case n == 1:
			st.bold = true
		case n == 22:
			st.bold = false
		case n >= 30 && n <= 37, n >= 90 && n <= 97:
			st.fg = strconv.Itoa(n)
		case n == 39:
			st.fg = ""
		case n >= 40 && n <= 47, n >= 100 && n <= 107:
			st.bg = strconv.Itoa(n)
		case n == 49:
			st.bg = ""
		case n == 38 || n == 48:
			// 38;5;n or 38;2;r;g;b: skip the colour's own parameters.
			if k+1 < len(codes) && codes[k+1] == "5" {
				k += 2
			} else if k+1 < len(codes) && codes[k+1] == "2" {
				k += 4
			}
		}
	}
	return st
}
