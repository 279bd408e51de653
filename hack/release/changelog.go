package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// checkChangelog refuses to release a version that the changelog has no section for,
// "## vX.Y.Z" opening a line: a release whose notes nobody wrote is not published. A
// pre-release (vX.Y.Z-rc.1, a test's v0.1.1-e2e) needs none; it ships to testers, who
// read the notes of the version it leads to.
func checkChangelog(file, version string) error {
	if strings.Contains(version, "-") {
		return nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading the changelog: %w", err)
	}
	if !hasSection(text, version) {
		return fmt.Errorf("%s has no section \"## %s\": write what the release changes for its users there first", file, version)
	}
	return nil
}

// hasSection is true when a line of text is "## VERSION", alone or followed by a space
// and more (a date).
func hasSection(text []byte, version string) bool {
	s := bufio.NewScanner(bytes.NewReader(text))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "## "+version)
		if ok && (rest == "" || strings.HasPrefix(rest, " ")) {
			return true
		}
	}
	return false
}
