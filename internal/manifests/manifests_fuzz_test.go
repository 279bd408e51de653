package manifests

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecode: whatever a YAML or JSON stream holds, Decode returns an error or
// non-empty objects that, written out again as a JSON stream, decode to the same
// objects.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n---\n---\nkind: B\n",
		`{"apiVersion":"tfk8s.io/v1alpha1","kind":"TFJob","spec":{"tfReplicaSpecs":{"Worker":{"replicas":2}}}}`,
		"a: 1.5\nb: [1, 2.0, -3, 1e300, true, null, '']\nc: {d: {e: f}}\n",
		"- not\n- an object\n",
		"a: &x {b: 1}\nc: *x\n",
		"---\n# only a comment\n...\n",
		"a: 9223372036854775807\nb: 18446744073709551616\n",
		"{\"a\": 1} {\"b\": 2}",
		"\ta: tab",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(data)
		if err != nil {
			return
		}
		var again bytes.Buffer
		for _, o := range objs {
			if len(o.Object) == 0 {
				t.Fatalf("an empty object among %d", len(objs))
			}
			js, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatalf("a decoded object does not encode: %v", err)
			}
			again.Write(js)
			again.WriteString("\n")
		}
		back, err := Decode(again.Bytes())
		if err != nil {
			t.Fatalf("the objects written out do not decode: %v\n%s", err, again.Bytes())
		}
		if diff := cmp.Diff(objs, back); diff != "" {
			t.Errorf("decoded, written and decoded again (-first +again):\n%s", diff)
		}
	})
}
