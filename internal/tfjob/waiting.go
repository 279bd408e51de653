package tfjob

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A Wait is a container that waits for a reason the user must act on.
type Wait struct {
	Container, Reason, Message string
	// Image is the container's image, as the kubelet reports it.
	Image string
}

// String is the wait as describe and logs print it: reason, then the kubelet's
// message (which names the image of a failed pull) on one line.
func (w Wait) String() string {
	if w.Message == "" {
		return w.Reason
	}
	return w.Reason + ": " + w.Message
}

// passingWaits are the waiting reasons every container goes through on its way to
// running: they need nothing from the user.
var passingWaits = map[string]bool{"ContainerCreating": true, "PodInitializing": true}

// WaitsOnUser returns the pod's containers, init containers first, that wait for a
// reason a user must act on (ErrImagePull, ImagePullBackOff,
// CreateContainerConfigError...): the pod's phase alone says only Pending. The
// controller, describe and logs read them here, so that all three agree.
func WaitsOnUser(p *corev1.Pod) []Wait {
	var waits []Wait
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		w := s.State.Waiting
		if w == nil || w.Reason == "" || passingWaits[w.Reason] {
			continue
		}
		waits = append(waits, Wait{Container: s.Name, Reason: w.Reason, Message: strings.Join(strings.Fields(w.Message), " "), Image: s.Image})
	}
	return waits
}
