package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

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
		for i, u := range unsaid {
			if !printable(u) {
				unsaid[i] = ansiC(u)
			}
		}
		fmt.Fprintf(w, "  which leave out %s: keep them with -f\n", strings.Join(unsaid, ", "))
	}
}

// shellWord quotes s for a POSIX shell where it needs it, and for the terminal: s
// comes from a manifest or an untrusted run.json, so a control character (an escape
// sequence, a carriage return) or an invalid byte in it is written as bash's ANSI-C
// quoting spells it, $'\xNN', never raw.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,@%+", r))
	}) < 0 {
		return s
	}
	if !printable(s) {
		return ansiC(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printable says whether s is valid UTF-8 of printable runes and ASCII spaces only.
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// ansiC quotes s as $'...': printable runes as they are but for \ and ', and every
// byte of another rune, or of invalid UTF-8, as \xNN.
func ansiC(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r != utf8.RuneError && unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
		i += n
	}
	b.WriteString("'")
	return b.String()
}
