package jobspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Kind is how a parameter is typed in: it chooses the flag's type and the form's input.
type Kind int

// Kinds of parameters.
const (
	KindString Kind = iota
	KindInt
	KindBool
	KindDuration
	// KindChoice is one of Form.Choices.
	KindChoice
	// KindList is repeatable: a flag given again, a form's line.
	KindList
	// KindArgs is the command: submit's arguments after --, the form's words.
	KindArgs
)

// Field is one parameter: its flag, its place in Params, and how the dashboard's form
// shows it. Fields is the one list the CLI registers its flags from and the form is
// drawn from.
type Field struct {
	// Flag is the flag's name, Params' JSON key and the form's input name.
	Flag string
	// Name is what the form calls it.
	Name string
	// Help is the flag's help.
	Help string
	Kind Kind
	// Default is the flag's default, as typed; "" for none.
	Default string
	// Form is how the dashboard's form shows the field; nil for a parameter the form
	// leaves out, one that reads the user's files or S3 settings.
	Form *Form
	// param is where the field is in Params.
	param func(*Params) any
	// inverse reads the field's parameter from a job, as Inverse does.
	inverse func(view, *Params)
}

// Form is how the dashboard's form shows a field.
type Form struct {
	Required bool
	// Wide fields take a whole line of the form.
	Wide        bool
	Size, Rows  int
	Placeholder string
	// Hint follows the label of a list, e.g. "NAME=VALUE a line".
	Hint string
	// Choices are a choice's values, the default first.
	Choices []string
}

// Input is the HTML input the dashboard's form shows the field with: text, number,
// checkbox, select or textarea.
func (f Field) Input() string {
	switch f.Kind {
	case KindInt:
		return "number"
	case KindBool:
		return "checkbox"
	case KindChoice:
		return "select"
	case KindList:
		return "textarea"
	}
	return "text"
}

// IsFlag reports whether the field is a flag, not the command after --.
func (f Field) IsFlag() bool { return f.Kind != KindArgs }

// Fields are the parameters of a job, in the order of the dashboard's form.
func Fields() []Field { return fields }

// FormFields are the fields the dashboard's form shows, in its order.
func FormFields() []Field {
	var out []Field
	for _, f := range fields {
		if f.Form != nil {
			out = append(out, f)
		}
	}
	return out
}

// Set sets the field's parameter in p from text as the flag reads it; a list's value
// is added to those already there.
func (f Field) Set(p *Params, s string) error {
	switch v := f.param(p).(type) {
	case *string:
		*v = s
	case **string:
		*v = ptr.To(s)
	case *[]string:
		*v = append(*v, s)
	case **int32:
		n, err := strconv.ParseInt(s, 0, 32)
		if err != nil {
			return err
		}
		*v = ptr.To(int32(n))
	case **int64:
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return err
		}
		*v = ptr.To(n)
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		*v = b
	case **bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		*v = ptr.To(b)
	case **metav1.Duration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*v = &metav1.Duration{Duration: d}
	default:
		panic(fmt.Sprintf("jobspec: field %s has a parameter of type %T", f.Flag, v))
	}
	return nil
}

// Given reports whether p gives the field's parameter.
func (f Field) Given(p *Params) bool {
	switch v := f.param(p).(type) {
	case *string:
		return *v != ""
	case *bool:
		return *v
	case *[]string:
		return len(*v) > 0
	case **string:
		return *v != nil
	case **int32:
		return *v != nil
	case **int64:
		return *v != nil
	case **bool:
		return *v != nil
	case **metav1.Duration:
		return *v != nil
	}
	return false
}

// Text is the field's parameter in p as the flag would read it; "" when not given.
func (f Field) Text(p *Params) string {
	if !f.Given(p) {
		return ""
	}
	switch v := f.param(p).(type) {
	case *string:
		return *v
	case **string:
		return **v
	case *[]string:
		return strings.Join(*v, "\n")
	case **int32:
		return strconv.Itoa(int(**v))
	case **int64:
		return strconv.FormatInt(**v, 10)
	case *bool:
		return strconv.FormatBool(*v)
	case **bool:
		return strconv.FormatBool(**v)
	case **metav1.Duration:
		return (*v).Duration.String()
	}
	return ""
}

// FromForm reads the dashboard's form: each field by its flag's name, a list one
// value a line, and the command split at spaces. A field that is not the form's is
// refused, so that nothing reaches the files or the S3 settings of the dashboard's
// host.
func FromForm(values map[string]string, command string) (Params, error) {
	form := FormFields()
	var names []string
	known := map[string]Field{}
	for _, f := range form {
		if f.Kind != KindArgs {
			names = append(names, f.Flag)
			known[f.Flag] = f
		}
	}
	for name := range values {
		if _, ok := known[name]; !ok {
			return Params{}, fmt.Errorf("field %q: not a flag the dashboard submits with (%s)", name, strings.Join(names, ", "))
		}
	}
	p := Params{Command: strings.Fields(command)}
	for _, name := range names {
		v, ok := values[name]
		if !ok {
			continue
		}
		lines := []string{v}
		if known[name].Kind == KindList {
			lines = nonEmptyLines(v)
		}
		for _, line := range lines {
			line = strings.TrimSpace(line)
			if err := known[name].Set(&p, line); err != nil {
				return Params{}, fmt.Errorf("reading the form: invalid argument %q for %q flag: %w", line, "--"+name, err)
			}
		}
	}
	return p, nil
}

// ToForm is FromForm's inverse: p as the dashboard's form shows it, each field by
// its flag's name and the command joined with spaces, and the flags p gives that
// are not the form's, which the form would drop.
func ToForm(p Params) (values map[string]string, command string, outside []string) {
	values = map[string]string{}
	for _, f := range fields {
		switch {
		case !f.Given(&p):
		case f.Kind == KindArgs:
			command = strings.Join(p.Command, " ")
		case f.Form == nil:
			outside = append(outside, "--"+f.Flag)
		default:
			values[f.Flag] = f.Text(&p)
		}
	}
	return values, command, outside
}

// nonEmptyLines splits s into its lines that are not blank.
func nonEmptyLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// enumChoices are values for a form's select, the default first.
func enumChoices[T ~string](values []T, def T) []string {
	out := []string{string(def)}
	for _, v := range values {
		if v != def {
			out = append(out, string(v))
		}
	}
	return out
}

// gpuHelp is --gpus' help.
var gpuHelp = "GPUs (" + string(tfjob.GPUResource) + ") of every replica but the parameter servers"
