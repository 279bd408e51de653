package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// A block is one fenced code block of a Markdown file.
type block struct {
	file   string
	line   int    // of the opening fence, from 1
	lang   string // the fence's info string's first word: "sh", "console", ""
	marker string // the comment on the line before the fence, "" when there is none
	body   []string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// shellLangs are the info strings of blocks that hold commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

// Markers: a shell block is illustrative, run by a named test function (optionally with
// files of its package that hold the commands), run here, by the docs test itself, or
// read: the named test reads the block from its page and runs it as written, so its
// commands are in no string of the test.
const (
	illustrative = "illustrative"
	runHere      = "here"
	readPrefix   = "read:"
)

var markerRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// parseBlocks returns the fenced blocks of a Markdown file, each with the marker
// comment on the line just before its opening fence.
func parseBlocks(file string, src []byte) ([]block, error) {
	var (
		blocks []block
		cur    *block
		fence  string
		prev   string
		n      int
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, trimmed[:1]))]
			info := strings.Fields(strings.TrimPrefix(trimmed, fence))
			cur = &block{file: file, line: n}
			if len(info) > 0 {
				cur.lang = info[0]
			}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.marker = m[1]
			}
		case cur != nil && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body = append(cur.body, line)
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return blocks, fmt.Errorf("%s: fence never closed", cur)
	}
	return blocks, nil
}

// looksLikeCommands is true of a block without an info string whose lines start with a
// program the docs run: such a block must say it is shell, so that it carries a marker.
func looksLikeCommands(b block) bool {
	for _, l := range b.body {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
		if len(f) > 0 && knownPrograms[path.Base(f[0])] {
			return true
		}
	}
	return false
}

var knownPrograms = map[string]bool{
	"tfk8s": true, "kubectl": true, "helm": true, "make": true, "kustomize": true, "go": true,
	"sudo": true, "export": true, "cd": true, "curl": true, "docker": true, "git": true,
}

// A marking is what a block's marker says.
type marking struct {
	illustrative bool
	here         bool
	read         bool     // the test reads the block from the page
	test         string   // the test function that runs the commands
	files        []string // files of that test's package that hold them
}

// parseMarker reads a block's marker; a shell block without a valid one is an error.
func parseMarker(b block) (marking, error) {
	switch {
	case b.marker == "":
		return marking{}, fmt.Errorf("%s: a %s block needs <!-- illustrative -->, <!-- run: here --> or <!-- run: TestName [file...] --> on the line before it", b, b.lang)
	case b.marker == illustrative:
		return marking{illustrative: true}, nil
	case strings.HasPrefix(b.marker, "run:"):
		f := strings.Fields(strings.TrimPrefix(b.marker, "run:"))
		switch {
		case len(f) == 0:
			return marking{}, fmt.Errorf("%s: %q names no test", b, b.marker)
		case f[0] == runHere && len(f) == 1:
			return marking{here: true}, nil
		case strings.HasPrefix(f[0], "Test"):
			return marking{test: f[0], files: f[1:]}, nil
		}
	}
	if f := strings.Fields(strings.TrimPrefix(b.marker, readPrefix)); strings.HasPrefix(b.marker, readPrefix) &&
		len(f) == 1 && strings.HasPrefix(f[0], "Test") {
		return marking{read: true, test: f[0]}, nil
	}
	return marking{}, fmt.Errorf("%s: unknown marker %q", b, b.marker)
}

// commands splits a shell block into commands, each a list of words: lines joined at a
// trailing backslash, comments dropped, and ;, &&, || and | ending a command. In a
// console block only the lines after a "$ " prompt are commands.
func commands(b block) ([][]string, error) {
	var lines []string
	cont := false
	for _, l := range b.body {
		switch {
		case cont:
			lines[len(lines)-1] += " " + strings.TrimSpace(l)
		case b.lang == "console" && !strings.HasPrefix(l, "$ "):
			continue
		default:
			lines = append(lines, strings.TrimPrefix(l, "$ "))
		}
		cont = strings.HasSuffix(lines[len(lines)-1], `\`)
		if cont {
			lines[len(lines)-1] = strings.TrimSuffix(lines[len(lines)-1], `\`)
		}
	}
	var cmds [][]string
	for _, l := range lines {
		c, err := splitWords(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w in %q", b, err, l)
		}
		cmds = append(cmds, c...)
	}
	return cmds, nil
}

// splitWords splits one shell line into commands of words, as sh would without
// expansions: quotes group, a backslash escapes, # starts a comment.
func splitWords(line string) ([][]string, error) {
	var (
		cmds  [][]string
		words []string
		word  strings.Builder
		in    bool // inside a word
		quote rune
	)
	endWord := func() {
		if in {
			words = append(words, word.String())
		}
		word.Reset()
		in = false
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			word.WriteRune(rs[i])
			in = true
		case r == '#' && !in:
			endCmd()
			return cmds, nil
		case r == ' ' || r == '\t':
			endWord()
		case r == ';' || r == '|' || r == '&':
			endCmd()
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	endCmd()
	return cmds, nil
}

// program strips a command's leading assignments and sudo, and names its program by
// its base name (bin/tfk8s is tfk8s, and so is kubectl tfk8s).
func program(cmd []string) (string, []string) {
	for len(cmd) > 0 && (cmd[0] == "sudo" || isAssignment(cmd[0])) {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return "", nil
	}
	name, args := path.Base(cmd[0]), cmd[1:]
	if name == "kubectl" && len(args) > 0 && args[0] == "tfk8s" {
		return "tfk8s", args[1:]
	}
	return name, args
}

var assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(w string) bool { return assignmentRE.MatchString(w) }

// builtins change the shell rather than run a program; the docs test applies export.
var builtins = map[string]bool{"export": true, "cd": true}

// checkMarked refuses a shell block without a valid marker, and a block that runs a
// program without saying it is shell.
func checkMarked(b block) error {
	if shellLangs[b.lang] {
		_, err := parseMarker(b)
		return err
	}
	if b.lang == "" && looksLikeCommands(b) {
		return fmt.Errorf("%s: this block runs %s: label it sh or console, and mark it", b, firstProgram(b))
	}
	return nil
}

func firstProgram(b block) string {
	for _, l := range b.body {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "$ "))
		if len(f) > 0 && knownPrograms[path.Base(f[0])] {
			return path.Base(f[0])
		}
	}
	return ""
}
