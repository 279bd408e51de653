package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// gangFlags are the flags that turn native gang scheduling on: the API version that
// serves PodGroups, and the feature gates the API server, the controller manager and
// the scheduler alike need. Both moved between Kubernetes releases.
type gangFlags struct {
	runtimeConfig string
	gates         string
}

// ErrNoGangScheduling is Start's error, wrapped with the release, when
// Options.GangScheduling asks for the PodGroup API of a release that has none: a test of
// native gang scheduling skips on it.
var ErrNoGangScheduling = errors.New("native gang scheduling needs Kubernetes 1.36 or later")

// gangFlagsFor returns the gang flags of a Kubernetes release: 1.37 serves
// scheduling.k8s.io/v1beta1 behind the GenericWorkload gate (beta, off by default),
// 1.36 v1alpha2 behind GenericWorkload and GangScheduling. Older releases have no
// PodGroup API.
func gangFlagsFor(v *version.Version) (gangFlags, error) {
	switch {
	case v.AtLeast(version.MajorMinor(1, 37)):
		return gangFlags{"--runtime-config=scheduling.k8s.io/v1beta1=true", "--feature-gates=GenericWorkload=true"}, nil
	case v.AtLeast(version.MajorMinor(1, 36)):
		return gangFlags{"--runtime-config=scheduling.k8s.io/v1alpha2=true", "--feature-gates=GenericWorkload=true,GangScheduling=true"}, nil
	}
	return gangFlags{}, fmt.Errorf("%w; kube-apiserver is %s", ErrNoGangScheduling, v)
}

// binaryVersion asks a Kubernetes binary its version (`--version` prints
// "Kubernetes v1.37.2").
func binaryVersion(ctx context.Context, binDir, name string) (*version.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, name), "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("asking %s its version: %w", name, err)
	}
	s := strings.TrimSpace(string(out))
	v, err := version.ParseGeneric(strings.TrimPrefix(s, "Kubernetes "))
	if err != nil {
		return nil, fmt.Errorf("%s --version printed %q: %w", name, s, err)
	}
	return v, nil
}
