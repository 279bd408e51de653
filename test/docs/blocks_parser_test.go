package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseFixture checks the parser on testdata/fixture.md: every block found with its
// marker, the unmarked and the unlabelled shell blocks refused, and commands split as
// sh would split them.
func TestParseFixture(t *testing.T) {
	src, err := os.ReadFile("testdata/fixture.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks("fixture.md", src)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Line   int
		Lang   string
		Marker string
	}
	var gots []got
	for _, b := range blocks {
		gots = append(gots, got{b.line, b.lang, b.marker})
	}
	want := []got{
		{4, "sh", "illustrative"},
		{9, "console", "run: TestSomething helpers_test.go"},
		{16, "text", ""},
		{20, "", ""},
		{24, "sh", ""},
		{29, "bash", "run: nothing"},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Fatalf("blocks (-want +got):\n%s", diff)
	}

	var errs []string
	for _, b := range blocks {
		if err := checkMarked(b); err != nil {
			errs = append(errs, err.Error())
		}
	}
	wantErrs := []string{
		"fixture.md:20: this block runs tfk8s: label it sh or console",
		"fixture.md:24: a sh block needs",
		`fixture.md:29: unknown marker "run: nothing"`,
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors:\n%s\nwant %d", strings.Join(errs, "\n"), len(wantErrs))
	}
	for i, e := range errs {
		if !strings.HasPrefix(e, wantErrs[i]) {
			t.Errorf("error %d: %q, want it to start with %q", i, e, wantErrs[i])
		}
	}

	m, err := parseMarker(blocks[1])
	if err != nil || m.test != "TestSomething" || !cmp.Equal(m.files, []string{"helpers_test.go"}) {
		t.Errorf("marker of the console block: %+v, %v", m, err)
	}
	cmds, err := commands(blocks[1])
	if err != nil {
		t.Fatal(err)
	}
	wantCmds := [][]string{
		{"tfk8s", "notebook", "start", "-n", "team-a", "--cpu", "2"},
		{"A=1", "sudo", "bin/tfk8s", "list"},
		{"kubectl", "tfk8s", "logs", "job one", "-f"},
		{"head"},
	}
	if diff := cmp.Diff(wantCmds, cmds); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if name, args := program(cmds[2]); name != "tfk8s" || !cmp.Equal(args, []string{"logs", "job one", "-f"}) {
		t.Errorf("program(%q) = %q %q, want tfk8s [logs job one -f]", cmds[2], name, args)
	}
	if name, args := program(cmds[1]); name != "tfk8s" || !cmp.Equal(args, []string{"list"}) {
		t.Errorf("program(%q) = %q %q, want tfk8s [list]", cmds[1], name, args)
	}
	cmds, err = commands(blocks[5])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"echo", "a # not a comment"}, {"echo", "b"}}, cmds); diff != "" {
		t.Errorf("quoted # (-want +got):\n%s", diff)
	}
}

// TestUnclosedFenceIsAnError keeps a block that runs to the end of the file from
// hiding the rest of it.
func TestUnclosedFenceIsAnError(t *testing.T) {
	if _, err := parseBlocks("x.md", []byte("text\n```sh\nmake demo\n")); err == nil {
		t.Error("an unclosed fence parsed without error")
	}
}
