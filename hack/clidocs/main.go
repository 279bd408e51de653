// Command clidocs writes docs/reference/cli.md, the reference of every tfk8s command
// and flag, with cobra's own Markdown generator: one section per command, in the order
// a reader walks the tree, linked by anchors within the page. make generate runs it,
// and make verify fails when the committed page differs from what the code says.
//
// Usage: clidocs <file>
package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/cli"
)

// header opens the page; cobra's sections follow it.
const header = `# tfk8s command reference

Generated from the commands' own help by ` + "`make generate`" + ` (hack/clidocs); edit the
help in internal/cli, not this page. ` + "`tfk8s <command> --help`" + ` prints the same text.

`

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clidocs <file>")
		os.Exit(2)
	}
	out, err := generate()
	if err == nil {
		err = os.WriteFile(os.Args[1], out, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "clidocs: %v\n", err)
		os.Exit(1)
	}
}

// generate renders the whole command tree, as the tfk8s binary builds it, into one page.
func generate() ([]byte, error) {
	// No environment: the defaults the page shows are the program's, not this shell's.
	// kubectl's flags read $HOME for --cache-dir's default, which the page names as such.
	if err := os.Setenv("HOME", "$HOME"); err != nil {
		return nil, err
	}
	root := cli.NewRootCommand(cli.Env{IOStreams: genericiooptions.NewTestIOStreamsDiscard(), Getenv: func(string) string { return "" }})
	// cobra adds its completion command only when a command runs; the page lists it too.
	root.InitDefaultCompletionCmd()
	var buf bytes.Buffer
	buf.WriteString(header)
	for _, cmd := range commands(root) {
		// A generation date would make every run differ from the committed page.
		cmd.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(cmd, &buf, anchor); err != nil {
			return nil, fmt.Errorf("rendering %s: %w", cmd.CommandPath(), err)
		}
	}
	return append(bytes.TrimRight(buf.Bytes(), "\n"), '\n'), nil
}

// commands is cmd and every command below it that a user can run or read about,
// depth first, each level by name, as cobra lists them in --help.
func commands(cmd *cobra.Command) []*cobra.Command {
	all := []*cobra.Command{cmd}
	children := slices.Clone(cmd.Commands())
	slices.SortFunc(children, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
	for _, c := range children {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		all = append(all, commands(c)...)
	}
	return all
}

// anchor turns cobra's link to a command's own file, tfk8s_local_up.md, into the
// anchor of its section on this page, #tfk8s-local-up.
func anchor(file string) string {
	return "#" + strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", "-")
}
