package cli

import (
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// kubelet plays the kubelet: it writes the pod status a kubelet would.
func kubelet() testutil.Kubelet { return testutil.Kubelet{Client: k8sClient} }
