package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// checkChangelog refuses to release a version that the changelog has no released
// section for: "## vX.Y.Z" opening a line, its rest (a date) not saying "unreleased". A
// release whose notes nobody wrote, or whose notes still say it is not out, is not
// published. A pre-release (vX.Y.Z-rc.1, the upgrade test's v0.0.1-test) needs none; it
// ships to testers, who read the notes of the version it leads to.
func checkChangelog(file, version string) error {
	if strings.Contains(version, "-") {
		return nil
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading the changelog: %w", err)
	}
	rest, ok := section(text, version)
	if !ok {
		return fmt.Errorf("%s has no section \"## %s\": write what the release changes for its users there first", file, version)
	}
	if strings.Contains(strings.ToLower(rest), "unreleased") {
		return fmt.Errorf("%s's section \"## %s%s\" says it is unreleased: give it its date first", file, version, rest)
	}
	return nil
}

// section finds the line of text that is "## VERSION", alone or followed by a space and
// more (a date), and returns that more, with its space.
func section(text []byte, version string) (string, bool) {
	s := bufio.NewScanner(bytes.NewReader(text))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "## "+version)
		if ok && (rest == "" || strings.HasPrefix(rest, " ")) {
			return rest, true
		}
	}
	return "", false
}
