package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckChangelog checks which versions a changelog lets make release publish.
func TestCheckChangelog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "CHANGELOG.md")
	text := "# Changelog\n\n## v0.2.0 (2026-12-01)\n\n- a change\n\n## v0.1.0\n\n- the first\n\n### v0.3.0 is a subsection\n\n## v0.4.0 (Unreleased)\n\n- to come\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"v0.1.0", true},      // a section with no date
		{"v0.2.0", true},      // a section with its date
		{"v0.1.1-e2e", true},  // a pre-release needs no section
		{"v0.2.1", false},     // no section
		{"v0.3.0", false},     // only a deeper heading names it
		{"v0.2", false},       // a prefix of v0.2.0 is not its section
		{"v0.1.0-rc.1", true}, // a release candidate, a pre-release
		{"v0.10.0", false},    // v0.1.0's section is not v0.10.0's
		{"v0.2.0.1", false},   // not the section's version either
		{"v0.4.0", false},     // a section that says it is unreleased
		{"v0.4.0-rc.1", true}, // which a pre-release of it needs not
	} {
		t.Run(tc.version, func(t *testing.T) {
			err := checkChangelog(file, tc.version)
			if (err == nil) != tc.ok {
				t.Errorf("checkChangelog(%s) = %v, want ok %v", tc.version, err, tc.ok)
			}
		})
	}
	if err := checkChangelog(filepath.Join(t.TempDir(), "missing.md"), "v1.0.0"); err == nil {
		t.Error("checkChangelog of a missing file succeeded")
	}
}
