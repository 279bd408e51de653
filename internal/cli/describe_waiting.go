package cli

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// passingWaits are the waiting reasons every container goes through on its way to
// running: they need nothing from the user, so describe leaves them out.
var passingWaits = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// describeWaiting writes, under the pods, a line for each container, init containers
// first, that waits for a reason a user must act on (ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError...): the pod's phase alone says only Pending. The lines
// hold no tab, so that the pods' columns keep their widths.
func describeWaiting(w io.Writer, pods []corev1.Pod) {
	var lines []string
	for i := range pods {
		p := &pods[i]
		for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			wait := s.State.Waiting
			if wait == nil || wait.Reason == "" || passingWaits[wait.Reason] {
				continue
			}
			line := fmt.Sprintf("  %s container %s: %s", p.Name, s.Name, wait.Reason)
			if msg := strings.Join(strings.Fields(wait.Message), " "); msg != "" {
				line += ": " + msg
			}
			lines = append(lines, line)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "Waiting:")
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}
