package node_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/testing/registryserver"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// probeConfig is the configuration of the test image: entrypoint, cmd, env, working
// directory and user, all of which the container must get.
func probeConfig(marker string) v1.Config {
	return v1.Config{
		Entrypoint: []string{"/bin/probe", "entry"}, Cmd: []string{"cmd1"},
		Env:        []string{"PATH=/bin", "IMAGE_VAR=from-image", "OVERRIDE=image", "MARKER=" + marker},
		WorkingDir: "/home/app", User: "app",
	}
}

// TestImages: a node pulls real images from a real registry (CNCF Distribution) and
// runs containers on their unpacked roots, under every pull policy, with pull secrets,
// a mirror, and the kubelet's pull errors, statuses and events.
func TestImages(t *testing.T) {
	reg := registryserver.Start(t)
	private := registryserver.Start(t, registryserver.WithAuth())
	imageDir := startImageNode(t, reg.Addr)
	ns := testutil.Namespace(t, c)

	t.Run("EntrypointEnvWorkdirUserAndWhiteouts", func(t *testing.T) {
		img := probeImage(t, probeConfig("v1"))
		reg.Push(t, img, "tfk8s/probe:1")
		digest, _ := img.Digest()
		// ghcr.io is mirrored to the test registry: the reference users write works.
		const ref = "ghcr.io/tfk8s/probe:1"
		createPod(t, imagePod("probe", ns, ref))
		done := waitPhase(t, ns, "probe", corev1.PodSucceeded)
		got := logLines(podLogs(t, ns, "probe", &corev1.PodLogOptions{Container: "main"}))
		want := []string{
			"args=/bin/probe entry cmd1", "cwd=/home/app", "uid=1234 gid=2345 groups=[3456]",
			"env HOME=/home/app", "env HOSTNAME=probe", "env IMAGE_VAR=from-image",
			// The kubernetes Service, as the kubelet gives it to every container.
			"env KUBERNETES_PORT=tcp://10.96.0.1:443", "env KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
			"env KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1", "env KUBERNETES_PORT_443_TCP_PORT=443",
			"env KUBERNETES_PORT_443_TCP_PROTO=tcp", "env KUBERNETES_SERVICE_HOST=10.96.0.1",
			"env KUBERNETES_SERVICE_PORT=443", "env KUBERNETES_SERVICE_PORT_HTTPS=443",
			"env LIST=/data /data/sub", "env MARKER=v1", "env OVERRIDE=container", "env PATH=/bin",
			"ls /data: keep sub", "ls /data/sub: new",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("what the container saw (-want +got):\n%s", diff)
		}
		s := containerStatus(done.Status.ContainerStatuses, "main")
		if s.Image != ref || s.ImageID != "ghcr.io/tfk8s/probe@"+digest.String() {
			t.Errorf("status image %q imageID %q, want %s and ghcr.io/tfk8s/probe@%s", s.Image, s.ImageID, ref, digest)
		}
		pulled := waitEvent(t, ns, "probe", "Pulled", "Successfully pulled image")
		t.Logf("pull+unpack of the probe image (%s): %s", ref, pulled)
		if got := podEvents(t, ns, "probe", "Pulling"); !slices.Equal(got, []string{`Pulling image "` + ref + `"`}) {
			t.Errorf("Pulling events %q", got)
		}

		// The image is present: IfNotPresent pulls nothing.
		createPod(t, imagePod("again", ns, ref))
		waitPhase(t, ns, "again", corev1.PodSucceeded)
		waitEvent(t, ns, "again", "Pulled", `Container image "`+ref+`" already present on machine`)
		if got := podEvents(t, ns, "again", "Pulling"); len(got) > 0 {
			t.Errorf("a present image was pulled again: %q", got)
		}
	})

	t.Run("AlwaysResolvesTheTagAgain", func(t *testing.T) {
		t.Parallel()
		ref := reg.Push(t, probeImage(t, probeConfig("first")), "tfk8s/moving:latest")
		for i, marker := range []string{"first", "second"} {
			if i == 1 {
				reg.Push(t, probeImage(t, probeConfig("second")), "tfk8s/moving:latest")
			}
			name := "moving-" + marker
			pod := imagePod(name, ns, ref)
			pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
			createPod(t, pod)
			waitPhase(t, ns, name, corev1.PodSucceeded)
			if got := logLines(podLogs(t, ns, name, &corev1.PodLogOptions{Container: "main"})); !slices.Contains(got, "env MARKER="+marker) {
				t.Errorf("pod %s ran %q, want MARKER=%s", name, got, marker)
			}
			waitEvent(t, ns, name, "Pulling", "Pulling image")
		}
	})

	t.Run("NeverWithoutTheImage", func(t *testing.T) {
		t.Parallel()
		pod := imagePod("never", ns, reg.Addr+"/tfk8s/absent:1")
		pod.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
		createPod(t, pod)
		p := waitPod(t, ns, "never", time.Minute, "ErrImageNeverPull", func(p *corev1.Pod) bool {
			r, _ := waitingReason(p.Status.ContainerStatuses, "main")
			return r == "ErrImageNeverPull"
		})
		_, msg := waitingReason(p.Status.ContainerStatuses, "main")
		if want := `Container image "` + reg.Addr + `/tfk8s/absent:1" is not present with pull policy of Never`; msg != want || p.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s message %q, want Pending and %q", p.Status.Phase, msg, want)
		}
	})

	t.Run("MissingImageBacksOffThenRuns", func(t *testing.T) {
		t.Parallel()
		ref := reg.Addr + "/tfk8s/late:1"
		pod := imagePod("late", ns, reg.Addr+"/tfk8s/probe-main:1")
		pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: ref, Command: []string{"/bin/probe", "init"}}}
		reg.Push(t, probeImage(t, probeConfig("main")), "tfk8s/probe-main:1")
		createPod(t, pod)
		p := waitPod(t, ns, "late", time.Minute, "backing off the init image", func(p *corev1.Pod) bool {
			r, _ := waitingReason(p.Status.InitContainerStatuses, "init")
			return r == "ImagePullBackOff"
		})
		if r, _ := waitingReason(p.Status.ContainerStatuses, "main"); p.Status.Phase != corev1.PodPending || r != "PodInitializing" {
			t.Errorf("while the init image is missing: %s, want Pending with main PodInitializing", describeStatus(p))
		}
		waitEvent(t, ns, "late", "Failed", `Failed to pull image "`+ref+`"`)
		waitEvent(t, ns, "late", "Failed", "Error: ErrImagePull")
		waitEvent(t, ns, "late", "BackOff", `Back-off pulling image "`+ref+`"`)

		reg.Push(t, probeImage(t, probeConfig("late")), "tfk8s/late:1")
		waitPod(t, ns, "late", 2*time.Minute, "Succeeded once the image is pushed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if got := logLines(podLogs(t, ns, "late", &corev1.PodLogOptions{Container: "init"})); len(got) == 0 || got[0] != "args=/bin/probe init" {
			t.Errorf("init container ran %q, want its command", got)
		}
	})

	t.Run("PrivateRepositoryWithPullSecret", func(t *testing.T) {
		t.Parallel()
		ref := private.Push(t, probeImage(t, probeConfig("private")), "tfk8s/private:1")
		auth := base64.StdEncoding.EncodeToString([]byte(private.User + ":" + private.Password))
		cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{private.Addr: map[string]string{"auth": auth}}})
		if _, err := clientset.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Always: the image may be present once the other pod pulled it.
		without := imagePod("private-without", ns, ref)
		without.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
		createPod(t, without)
		with := imagePod("private-with", ns, ref)
		with.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
		with.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
		createPod(t, with)
		waitPhase(t, ns, "private-with", corev1.PodSucceeded)
		waitPod(t, ns, "private-without", time.Minute, "failing to pull", func(p *corev1.Pod) bool {
			r, _ := waitingReason(p.Status.ContainerStatuses, "main")
			return r == "ErrImagePull" || r == "ImagePullBackOff"
		})
		if msg := waitEvent(t, ns, "private-without", "Failed", "Failed to pull image"); !strings.Contains(msg, "UNAUTHORIZED") {
			t.Errorf("pull without the secret failed with %q, want UNAUTHORIZED", msg)
		}
	})

	t.Run("TwoPodsUnpackTheImageOnce", func(t *testing.T) {
		t.Parallel()
		img := probeImage(t, probeConfig("twins"))
		ref := reg.Push(t, img, "tfk8s/twins:1")
		for _, name := range []string{"twin-a", "twin-b"} {
			createPod(t, imagePod(name, ns, ref))
		}
		for _, name := range []string{"twin-a", "twin-b"} {
			waitPhase(t, ns, name, corev1.PodSucceeded)
		}
		cfgName, _ := img.ConfigName()
		roots, _ := filepath.Glob(filepath.Join(imageDir, "roots", "sha256", cfgName.Hex+"*"))
		// Only this image's temporary roots: the subtests beside it unpack theirs at
		// the same time, in the same directory.
		tmp, _ := filepath.Glob(filepath.Join(imageDir, "tmp", "root-"+cfgName.Hex[:12]+"-*"))
		if len(roots) != 1 || len(tmp) != 0 {
			t.Errorf("unpacked roots of the image %v and temporary entries %v, want one root and nothing temporary", roots, tmp)
		}
	})

	t.Run("PullAndUnpackTime", func(t *testing.T) {
		t.Parallel()
		// 96 MiB of incompressible data in 6 layers over the probe: a measure of the
		// node's pull+unpack throughput from a registry on the same machine.
		img := probeImage(t, probeConfig("big"))
		for range 6 {
			l, err := random.Layer(16<<20, types.OCILayer)
			if err != nil {
				t.Fatal(err)
			}
			if img, err = mutate.AppendLayers(img, l); err != nil {
				t.Fatal(err)
			}
		}
		ref := reg.Push(t, img, "tfk8s/big:1")
		start := time.Now()
		createPod(t, imagePod("big", ns, ref))
		waitPhase(t, ns, "big", corev1.PodSucceeded)
		t.Logf("96 MiB image: pod created → Succeeded in %s; %s", time.Since(start).Round(time.Millisecond),
			waitEvent(t, ns, "big", "Pulled", "Successfully pulled"))
	})

	t.Run("ImageConfigErrors", func(t *testing.T) {
		t.Parallel()
		ref := reg.Push(t, probeImage(t, probeConfig("named")), "tfk8s/named:1")
		nonRoot := imagePod("nonroot", ns, ref)
		nonRoot.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
		createPod(t, nonRoot)
		noProcess := imagePod("noprocess", ns, reg.Push(t, probeImage(t, v1.Config{}), "tfk8s/empty:1"))
		createPod(t, noProcess)
		invalid := imagePod("invalid", ns, "Not/A:Valid:Reference")
		createPod(t, invalid)
		for _, tc := range []struct{ pod, reason, text string }{
			{"nonroot", "CreateContainerConfigError", "container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root"},
			{"noprocess", "CreateContainerError", "container main: image " + noProcess.Spec.Containers[0].Image + " has no entrypoint and no cmd"},
			{"invalid", "InvalidImageName", `Failed to apply default image tag "Not/A:Valid:Reference"`},
		} {
			p := waitPod(t, ns, tc.pod, time.Minute, tc.reason, func(p *corev1.Pod) bool {
				r, _ := waitingReason(p.Status.ContainerStatuses, "main")
				return r == tc.reason
			})
			if _, msg := waitingReason(p.Status.ContainerStatuses, "main"); !strings.Contains(msg, tc.text) {
				t.Errorf("pod %s: message %q, want it to contain %q", tc.pod, msg, tc.text)
			}
		}
	})
}
