package cli

import (
	"fmt"
	"io"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// printAsFlags writes the tfk8s submit command that gives job, read by
// jobspec.Inverse, and what of the job no flag says, which only its manifest (-f)
// keeps: a job moved from Kubeflow or recorded by a run is then submitted again
// with flags knowing what they leave out.
func printAsFlags(w io.Writer, job *tfv1.TFJob) {
	p, unsaid := jobspec.Inverse(job)
	args := jobspec.CommandLine(p)
	for i, a := range args {
		args[i] = shellWord(a)
	}
	fmt.Fprintf(w, "as flags: tfk8s submit %s\n", strings.Join(args, " "))
	if len(unsaid) > 0 {
		fmt.Fprintf(w, "  which leave out %s: keep them with -f\n", strings.Join(unsaid, ", "))
	}
}

// shellWord quotes s for a POSIX shell where it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
