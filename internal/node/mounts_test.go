package node

import "testing"

func TestUnescapeMountPath(t *testing.T) {
	cases := map[string]string{
		`/var/lib/tfk8s-node`:   "/var/lib/tfk8s-node",
		`/a\040b`:               "/a b",
		`/tab\011x\134`:         "/tab\tx\\",
		`/trailing\04`:          `/trailing\04`,
		`/mixed\040and\040more`: "/mixed and more",
	}
	for in, want := range cases {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
