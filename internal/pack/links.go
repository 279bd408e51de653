package pack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EscapingLinkError is a symbolic link under a directory being shipped whose target
// lies outside it: following it would upload a file the user never put there (a link
// to ~/.tfk8s/config, say), and storing it as a link would leave the replica a link to
// a file of its own machine.
type EscapingLinkError struct {
	// Link is the link's path; Target is what it points to, as written.
	Link, Target string
	// Dir is the directory it leaves.
	Dir string
}

func (e *EscapingLinkError) Error() string {
	return fmt.Sprintf("refusing %s: a symbolic link to %s, outside %s", e.Link, e.Target, e.Dir)
}

// LinkChecker judges the symbolic links under one directory.
type LinkChecker struct {
	dir     string
	realDir string
}

// NewLinkChecker returns the checker of the links under dir.
func NewLinkChecker(dir string) (LinkChecker, error) {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return LinkChecker{}, err
	}
	realDir, err = filepath.Abs(realDir)
	return LinkChecker{dir: dir, realDir: realDir}, err
}

// Check returns an *EscapingLinkError if the symbolic link at link (a path under the
// directory) leads outside it. A link that resolves is judged by where it resolves to,
// through any chain of links; a dangling one by its target, from its real parent.
func (lc LinkChecker) Check(link string) error {
	target, err := os.Readlink(link)
	if err != nil {
		return err
	}
	resolved, err := filepath.EvalSymlinks(link)
	if errors.Is(err, fs.ErrNotExist) {
		parent, perr := filepath.EvalSymlinks(filepath.Dir(link))
		if perr != nil {
			return perr
		}
		resolved, err = target, nil
		if !filepath.IsAbs(target) {
			resolved = filepath.Join(parent, target)
		}
	}
	if err != nil {
		return err
	}
	if resolved, err = filepath.Abs(resolved); err != nil {
		return err
	}
	if rel, err := filepath.Rel(lc.realDir, resolved); err != nil || !filepath.IsLocal(rel) && rel != "." {
		return &EscapingLinkError{Link: link, Target: target, Dir: lc.dir}
	}
	return nil
}
