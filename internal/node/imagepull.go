package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Waiting reasons of a container whose image the node cannot get, the kubelet's.
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
	ReasonInvalidImageName  = "InvalidImageName"
)

// hostImage is what containers of --host-image images run on: the host's root, with
// the node's binaries first on the PATH.
func hostImage(binDir string) *image {
	return &image{host: true, root: "/", config: v1.Config{Env: []string{"PATH=" + containerPath(binDir)}}}
}

// ensureImage gets the container's image under its pull policy, retrying failed pulls
// with the kubelet's back-off, the container waiting meanwhile with the reason. It
// returns nil when the pod stops first.
func (r *containerRunner) ensureImage(ctx context.Context) *image {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.w.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	image := r.spec.Image
	for {
		img, reason, err := r.obtainImage(ctx)
		if err == nil {
			r.w.mu.Lock()
			r.imageID, r.pullBackoff = img.id, 0
			r.w.mu.Unlock()
			return img
		}
		if r.w.stopping() {
			return nil
		}
		r.setWaiting(reason, err.Error())
		delay := r.nextPullBackoff()
		if reason == ReasonErrImagePull {
			// The kubelet reports the failure, then the back-off until the next try.
			if !r.sleep(delay / 2) {
				return nil
			}
			r.setWaiting(ReasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q: %s: %v", image, ReasonErrImagePull, err))
			r.w.event(corev1.EventTypeNormal, "BackOff", "Back-off pulling image %q", image)
			r.w.event(corev1.EventTypeWarning, "Failed", "Error: %s", ReasonImagePullBackOff)
			delay -= delay / 2
		}
		if !r.sleep(delay) {
			return nil
		}
	}
}

// nextPullBackoff returns the delay before the next pull and doubles the following
// one up to the maximum.
func (r *containerRunner) nextPullBackoff() time.Duration {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.pullBackoff == 0 {
		r.pullBackoff = r.w.m.opts.RestartBackoff
	}
	d := r.pullBackoff
	r.pullBackoff = min(r.pullBackoff*2, MaxRestartBackoff)
	return d
}

// sleep waits d unless the pod stops first; it reports whether it waited.
func (r *containerRunner) sleep(d time.Duration) bool {
	select {
	case <-r.w.stopCh:
		return false
	case <-time.After(d):
		return true
	}
}

// obtainImage applies the pull policy once: the cached image, or a pull, with the
// kubelet's events. On failure it returns the container's waiting reason.
func (r *containerRunner) obtainImage(ctx context.Context) (*image, string, error) {
	c := &r.spec
	if slices.Contains(r.w.m.opts.HostImages, c.Image) {
		return hostImage(r.w.m.opts.BinDir), "", nil
	}
	ref, err := name.ParseReference(c.Image)
	if err != nil {
		//lint:ignore ST1005 the kubelet's words, shown as the container's waiting message
		err = fmt.Errorf("Failed to apply default image tag %q: %w", c.Image, err)
		r.w.event(corev1.EventTypeWarning, "InspectFailed", "%v", err)
		r.w.event(corev1.EventTypeWarning, "Failed", "Error: %s", ReasonInvalidImageName)
		return nil, ReasonInvalidImageName, err
	}
	store := r.w.m.images
	policy := pullPolicy(c.ImagePullPolicy, ref)
	if policy != corev1.PullAlways {
		if img, ok := store.lookup(ref); ok {
			r.w.event(corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
			return img, "", nil
		}
	}
	if policy == corev1.PullNever {
		//lint:ignore ST1005 the kubelet's words, shown as the container's waiting message
		err := fmt.Errorf("Container image %q is not present with pull policy of Never", c.Image)
		r.w.event(corev1.EventTypeWarning, ReasonErrImageNeverPull, "%v", err)
		r.w.event(corev1.EventTypeWarning, "Failed", "Error: %s", ReasonErrImageNeverPull)
		return nil, ReasonErrImageNeverPull, err
	}
	r.w.event(corev1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	start := time.Now()
	img, waited, err := store.pull(ctx, ref, r.w.pullKeychain())
	if err != nil {
		r.w.event(corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		r.w.event(corev1.EventTypeWarning, "Failed", "Error: %s", ReasonErrImagePull)
		return nil, ReasonErrImagePull, err
	}
	total := time.Since(start)
	r.w.event(corev1.EventTypeNormal, "Pulled", "Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.",
		c.Image, roundDuration(total-waited), roundDuration(total), img.size)
	return img, "", nil
}

// pullPolicy is the container's policy, defaulted as the API server does: Always for
// :latest or no tag, else IfNotPresent.
func pullPolicy(p corev1.PullPolicy, ref name.Reference) corev1.PullPolicy {
	if p != "" {
		return p
	}
	if t, ok := ref.(name.Tag); ok && t.TagStr() == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func roundDuration(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// pullKeychain holds the credentials of the pod's imagePullSecrets. A Secret that
// cannot be read is reported and skipped, as the kubelet does: the pull may still work.
func (w *podWorker) pullKeychain() pullSecretKeychain {
	kc := pullSecretKeychain{}
	var missing []string
	for _, ref := range w.currentPod().Spec.ImagePullSecrets {
		s, err := w.api().Secret(ref.Name)
		if err == nil {
			err = kc.add(s)
		}
		if err != nil {
			if !apierrors.IsNotFound(err) {
				w.log.Error(err, "Reading an image pull secret", "secret", ref.Name)
			}
			missing = append(missing, ref.Name)
		}
	}
	if len(missing) > 0 {
		w.event(corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	return kc
}
