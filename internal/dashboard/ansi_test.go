package dashboard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestANSISegments(t *testing.T) {
	cases := []struct {
		name, line string
		want       []ansiSegment
	}{
		{"plain", "epoch 1", []ansiSegment{{Text: "epoch 1"}}},
		{"empty", "", []ansiSegment{}},
		{"colour then reset", "\x1b[31mred\x1b[0m plain", []ansiSegment{{"ansi-fg-31", "red"}, {"", " plain"}}},
		{"bold and colour", "\x1b[1;32mok\x1b[m", []ansiSegment{{"ansi-bold ansi-fg-32", "ok"}}},
		{"background, bright", "\x1b[97;41m!\x1b[49m.", []ansiSegment{{"ansi-fg-97 ansi-bg-41", "!"}, {"ansi-fg-97", "."}}},
		{"256 colours skipped", "\x1b[38;5;196mx\x1b[1;38;2;1;2;3my", []ansiSegment{{"", "x"}, {"ansi-bold", "y"}}},
		{"cursor moves dropped", "a\x1b[2Kb\x1b[1Ac", []ansiSegment{{"", "abc"}}},
		{"markup is text", "<b>\x1b[31m<script>", []ansiSegment{{"", "<b>"}, {"ansi-fg-31", "<script>"}}},
		{"unterminated escape", "a\x1b[31", []ansiSegment{{"", "a"}}},
		{"lone escape", "a\x1b", []ansiSegment{{"", "a"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ansiSegments(tc.line)); diff != "" {
				t.Errorf("ansiSegments(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}

func TestSplitReplica(t *testing.T) {
	cases := []struct{ line, replica, text string }{
		{"[worker-0] step 1", "worker-0", "step 1"},
		{"[worker-0] [tag] x", "worker-0", "[tag] x"},
		{"worker-1: no logs yet", "", "worker-1: no logs yet"},
		{"[not a replica]", "", "[not a replica]"},
	}
	for _, tc := range cases {
		replica, text := splitReplica(tc.line)
		if replica != tc.replica || text != tc.text {
			t.Errorf("splitReplica(%q) = %q, %q; want %q, %q", tc.line, replica, text, tc.replica, tc.text)
		}
	}
}
