package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestPluginName: run as kubectl-tfk8s (kubectl tfk8s ...), the help names the
// command the way the user typed it; run as tfk8s, as tfk8s.
func TestPluginName(t *testing.T) {
	for _, tc := range []struct {
		name, args, want, notWant string
	}{
		{name: "tfk8s", args: "--help", want: "tfk8s [command]", notWant: "kubectl"},
		{name: PluginName, args: "--help", want: "kubectl tfk8s [command]"},
		{name: PluginName, args: "submit --help", want: "kubectl tfk8s submit"},
		{name: "/usr/local/bin/tfk8s", args: "submit --help", want: "  tfk8s submit", notWant: "kubectl"},
		{name: "/usr/local/bin/" + PluginName, args: "list --help", want: "kubectl tfk8s list"},
	} {
		t.Run(tc.name+" "+tc.args, func(t *testing.T) {
			var out, errOut bytes.Buffer
			env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				Getenv: func(string) string { return "" }, Name: tc.name}
			if code := Main(context.Background(), strings.Fields(tc.args), env); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if !strings.Contains(out.String(), tc.want) || (tc.notWant != "" && strings.Contains(out.String(), tc.notWant)) {
				t.Errorf("help lacks %q or has %q:\n%s", tc.want, tc.notWant, out.String())
			}
		})
	}
}
