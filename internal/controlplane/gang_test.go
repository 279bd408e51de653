package controlplane

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestGangFlagsFor: each release gets the PodGroup API and the gates it has; a release
// with neither is refused by name.
func TestGangFlagsFor(t *testing.T) {
	cases := []struct {
		version string
		want    gangFlags
		err     string
	}{
		{"v1.37.2", gangFlags{"--runtime-config=scheduling.k8s.io/v1beta1=true", "--feature-gates=GenericWorkload=true"}, ""},
		{"v1.38.0-alpha.1", gangFlags{"--runtime-config=scheduling.k8s.io/v1beta1=true", "--feature-gates=GenericWorkload=true"}, ""},
		{"v1.36.3", gangFlags{"--runtime-config=scheduling.k8s.io/v1alpha2=true", "--feature-gates=GenericWorkload=true,GangScheduling=true"}, ""},
		{"v1.35.4", gangFlags{}, "native gang scheduling needs Kubernetes 1.36 or later; kube-apiserver is 1.35.4"},
	}
	for _, tc := range cases {
		got, err := gangFlagsFor(version.MustParseGeneric(tc.version))
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("gangFlagsFor(%s) = %+v, %v; want %+v, %q", tc.version, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrNoGangScheduling) {
			t.Errorf("gangFlagsFor(%s) error %v is not ErrNoGangScheduling, which tests skip on", tc.version, err)
		}
	}
}
