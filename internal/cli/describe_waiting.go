package cli

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// describeWaiting writes, under the pods, a line for each container that waits for a
// reason a user must act on (tfjob.WaitsOnUser): the pod's phase alone says only
// Pending. The lines hold no tab, so that the pods' columns keep their widths.
func describeWaiting(w io.Writer, pods []corev1.Pod) {
	var lines []string
	for i := range pods {
		for _, wait := range tfjob.WaitsOnUser(&pods[i]) {
			lines = append(lines, fmt.Sprintf("  %s container %s: %s", pods[i].Name, wait.Container, wait))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "Waiting:")
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}
