package s3keys

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicyEdits: a key's statements are added beside an admin's own, name the
// prefix's objects and the bucket's listing under the prefix only, and are removed
// alone; removing the last statement leaves no policy.
func TestPolicyEdits(t *testing.T) {
	admins := `{"Version":"2012-10-17","Statement":[{"Sid":"admins","Effect":"Allow","Principal":{"AWS":["ops"]},"Action":["s3:*"],"Resource":["arn:aws:s3:::b/*"]}]}`
	k := Key{AccessKeyID: "tfk8sabc", Prefix: "notebooks/team/nb-a/"}
	with, err := withKey([]byte(admins), "b", k)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Statement []struct {
			Sid       string
			Principal map[string][]string
			Resource  []string
			Condition map[string]map[string][]string
		}
	}
	if err := json.Unmarshal(with, &got); err != nil {
		t.Fatal(err)
	}
	type brief struct {
		Sid, Resource, ListPrefix string
	}
	var briefs []brief
	for _, s := range got.Statement {
		b := brief{Sid: s.Sid, Resource: s.Resource[0]}
		if c := s.Condition["StringLike"]; c != nil {
			b.ListPrefix = c["s3:prefix"][0]
		}
		briefs = append(briefs, b)
	}
	want := []brief{
		{Sid: "admins", Resource: "arn:aws:s3:::b/*"},
		{Sid: "tfk8s-key-tfk8sabc-objects", Resource: "arn:aws:s3:::b/notebooks/team/nb-a/*"},
		{Sid: "tfk8s-key-tfk8sabc-list", Resource: "arn:aws:s3:::b", ListPrefix: "notebooks/team/nb-a/*"},
	}
	if diff := cmp.Diff(want, briefs); diff != "" {
		t.Errorf("withKey's statements (-want +got):\n%s", diff)
	}

	without, err := withoutKey(with, "tfk8sabc")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(admins, string(without)); diff != "" {
		t.Errorf("withoutKey (-want +got):\n%s", diff)
	}
	none, err := withoutKey(mustWithKey(t, nil, k), "tfk8sabc")
	if err != nil || none != nil {
		t.Errorf("withoutKey of the only key: %q, %v; want no policy", none, err)
	}
	if _, err := withKey([]byte("{not json"), "b", k); err == nil {
		t.Error("withKey of an unreadable policy: no error")
	}
}

func mustWithKey(t *testing.T, cur []byte, k Key) []byte {
	t.Helper()
	p, err := withKey(cur, "b", k)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
