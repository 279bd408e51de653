package jobspec

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestFieldsAreTheParams: the field list names every parameter once, each field's
// flag is the JSON key of the parameter it sets, and only the namespace (a flag of
// every command, -n) has no field.
func TestFieldsAreTheParams(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[Params]()
	for i := range typ.NumField() {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		keys = append(keys, key)
	}
	var flags []string
	for _, f := range Fields() {
		flags = append(flags, f.Flag)
		p := &Params{}
		value := map[Kind]string{KindInt: "3", KindBool: "true", KindDuration: "1m30s"}[f.Kind]
		if value == "" {
			value = "x"
		}
		if err := f.Set(p, value); err != nil {
			t.Fatalf("%s: %v", f.Flag, err)
		}
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(js, &got); err != nil {
			t.Fatal(err)
		}
		if _, ok := got[f.Flag]; !ok || len(got) != 1 || !f.Given(p) || f.Text(p) != value {
			t.Errorf("field %s set to %q: Params %s, given %t, text %q; want the key %s alone", f.Flag, value, js, f.Given(p), f.Text(p), f.Flag)
		}
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "namespace" })
	slices.Sort(keys)
	slices.Sort(flags)
	if d := cmp.Diff(keys, flags); d != "" {
		t.Errorf("Params' keys (-) and the fields' flags (+):\n%s", d)
	}
}

// TestFormFieldsNeedNothingOfTheHost: the form offers no parameter that reads the
// user's files or S3 settings.
func TestFormFieldsNeedNothingOfTheHost(t *testing.T) {
	for _, f := range FormFields() {
		if slices.Contains([]string{"data", "artifacts", "artifacts-interval", "expose-storage-credentials"}, f.Flag) {
			t.Errorf("the form offers --%s", f.Flag)
		}
	}
}

// TestFlagsAndFormGiveTheSameParams: the flags and the dashboard's form read the
// same text into the same parameters.
func TestFlagsAndFormGiveTheSameParams(t *testing.T) {
	var fromFlags Params
	fs := pflag.NewFlagSet("submit", pflag.ContinueOnError)
	AddFlags(fs, &fromFlags)
	err := fs.Parse([]string{"--name", "mnist", "--image", "tf", "--ps", "2", "--workers", "3", "--chief", "--gpus", "1",
		"--env", "A=1", "--env", "B=2", "--restart-policy", "OnFailure", "--active-deadline", "2h", "--resume-from", "old",
		"--volume", "name=logs,mount=/logs,size=1Gi"})
	if err != nil {
		t.Fatal(err)
	}
	fromFlags.Command = []string{"python3", "train.py"}
	fromForm, err := FromForm(map[string]string{"name": "mnist", "image": "tf", "ps": "2", "workers": "3", "chief": "true",
		"gpus": "1", "env": "A=1\n\nB=2\n", "restart-policy": "OnFailure", "active-deadline": "2h", "resume-from": "old",
		"volume": "name=logs,mount=/logs,size=1Gi"}, "python3  train.py")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromFlags, fromForm); d != "" {
		t.Errorf("flags (-) and form (+):\n%s", d)
	}
	want := Params{Name: "mnist", Image: "tf", Command: []string{"python3", "train.py"}, PS: ptr.To[int32](2), Workers: ptr.To[int32](3),
		Chief: ptr.To(true), GPUs: ptr.To[int64](1), Env: []string{"A=1", "B=2"}, RestartPolicy: ptr.To("OnFailure"),
		ActiveDeadline: &metav1.Duration{Duration: 7200e9}, ResumeFrom: "old", Volumes: []string{"name=logs,mount=/logs,size=1Gi"}}
	if d := cmp.Diff(want, fromForm); d != "" {
		t.Errorf("form (-want +got):\n%s", d)
	}
}

func TestFromFormErrors(t *testing.T) {
	for _, tc := range []struct {
		form map[string]string
		want string
	}{
		{map[string]string{"name": "x", "filename": "/etc/passwd"}, `field "filename": not a flag the dashboard submits with`},
		{map[string]string{"data": "/home"}, `field "data": not a flag the dashboard submits with`},
		{map[string]string{"workers": "many"}, `reading the form: invalid argument "many" for "--workers" flag: strconv.ParseInt: parsing "many": invalid syntax`},
		{map[string]string{"active-deadline": "soon"}, `reading the form: invalid argument "soon" for "--active-deadline" flag`},
	} {
		_, err := FromForm(tc.form, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromForm(%v): %v, want %q", tc.form, err, tc.want)
		}
	}
}
