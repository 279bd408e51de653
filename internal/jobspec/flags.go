package jobspec

import (
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AddFlags registers a flag of fs for every field but the command, each setting its
// parameter in p; a flag not given leaves its parameter out.
func AddFlags(fs *pflag.FlagSet, p *Params) {
	for _, f := range fields {
		if f.Kind == KindArgs {
			continue
		}
		v := flagValue{field: f, p: p}
		if f.Kind == KindBool {
			// As pflag's own boolean flags: --chief alone says true.
			fs.VarPF(boolFlagValue{v}, f.Flag, "", f.Help).NoOptDefVal = "true"
		} else {
			fs.Var(v, f.Flag, f.Help)
		}
	}
}

// flagValue is a field's flag: the pflag.Value of its parameter in p.
type flagValue struct {
	field Field
	p     *Params
}

func (v flagValue) Set(s string) error { return v.field.Set(v.p, s) }

// String is the parameter as given, else the default, which pflag's help shows.
func (v flagValue) String() string {
	if v.field.Given(v.p) {
		return v.field.Text(v.p)
	}
	return v.field.Default
}

// Type is what pflag's own flag of the parameter's type says, so that the help reads
// as it would with those.
func (v flagValue) Type() string {
	switch v.field.param(v.p).(type) {
	case **int32:
		return "int32"
	case **int64:
		return "int64"
	case *bool, **bool:
		return "bool"
	case **metav1.Duration:
		return "duration"
	case *[]string:
		return "stringArray"
	}
	return "string"
}

// boolFlagValue is a boolean field's flag, which takes no value: --chief.
type boolFlagValue struct{ flagValue }

func (boolFlagValue) IsBoolFlag() bool { return true }

// CommandLine is AddFlags' inverse: the arguments of tfk8s submit that give p, each
// flag as the table names it (a list's flag once a value, a boolean's alone when
// true), then -- and the command.
func CommandLine(p Params) []string {
	var args []string
	for _, f := range fields {
		if f.Kind == KindArgs || !f.Given(&p) {
			continue
		}
		if list, ok := f.param(&p).(*[]string); ok {
			for _, v := range *list {
				args = append(args, "--"+f.Flag, v)
			}
			continue
		}
		switch text := f.Text(&p); {
		case f.Kind != KindBool:
			args = append(args, "--"+f.Flag, text)
		case text == "true":
			args = append(args, "--"+f.Flag)
		default:
			// A boolean flag takes its value only after =.
			args = append(args, "--"+f.Flag+"="+text)
		}
	}
	if len(p.Command) > 0 {
		args = append(append(args, "--"), p.Command...)
	}
	return args
}
