package pack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IgnoreFile is the name of the files, in the packed directory or below it, that list
// paths to leave out of the archive in .gitignore syntax. A file's patterns apply to
// its own directory and below, and deeper files take precedence.
const IgnoreFile = ".tfk8signore"

// alwaysIgnored reports whether a path component is left out whatever the ignore files
// say: the ignore files themselves and git metadata.
func alwaysIgnored(name string, isDir bool) bool {
	return name == IgnoreFile || (isDir && name == ".git")
}

// ignoreRules accumulates the patterns of the ignore files met while walking.
type ignoreRules struct {
	patterns []gitignore.Pattern
}

// load adds the patterns of dir's ignore file, if it has one; domain is dir's path
// relative to the packed directory, as components.
func (r *ignoreRules) load(dir string, domain []string) error {
	b, err := os.ReadFile(filepath.Join(dir, IgnoreFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", IgnoreFile, err)
	}
	r.patterns = append(r.patterns, parseIgnore(b, domain)...)
	return nil
}

// parseIgnore parses gitignore syntax: blank lines and # comments are skipped.
func parseIgnore(content []byte, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// ignored reports whether the path (components relative to the packed directory) is
// left out.
func (r *ignoreRules) ignored(path []string, isDir bool) bool {
	if alwaysIgnored(path[len(path)-1], isDir) {
		return true
	}
	return gitignore.NewMatcher(r.patterns).Match(path, isDir)
}
