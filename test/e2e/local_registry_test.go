package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/version"
)

// registryAccount is the registry's account kept in the cluster's state directory
// dir, which only its owner (root) reads.
func registryAccount(t *testing.T, dir string) authn.Authenticator {
	t.Helper()
	path := filepath.Join(dir, "registry-credentials")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the registry's account: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	user, password, _ := strings.Cut(strings.TrimSpace(string(data)), ":")
	return &authn.Basic{Username: user, Password: password}
}

// checkAnonymousPushRefused pushes an image to the registry at addr without its
// account, as any user of the host could, and wants 401 Unauthorized.
func checkAnonymousPushRefused(t *testing.T, addr string) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(addr+"/tfk8s/agent:planted", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	err = remote.Write(ref, img)
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
		t.Errorf("an anonymous push to %s: %v, want 401 Unauthorized", ref, err)
	}
}

// checkRegistry wants local status to show the registry running at its address, and
// the registry to hold every image of the source tree's _out/images under its
// repository path, the agent's among them when make images has run: the node finds
// the controller's default agent image there. The registry answers only the account
// kept in the state directory: a push without it gets 401.
func checkRegistry(t *testing.T, st *localcluster.Status, binDir string) {
	auth := registryAccount(t, st.Dir)
	checkAnonymousPushRefused(t, st.Registry)
	var out bytes.Buffer
	st.Print(&out)
	row := regexp.MustCompile(`(?m)^registry +\d+ +running +` + regexp.QuoteMeta(st.Registry) + ` `)
	if !row.Match(out.Bytes()) || !strings.Contains(out.String(), "Registry: http://"+st.Registry+",") {
		t.Errorf("local status shows no running registry at %s:\n%s", st.Registry, out.String())
	}
	for ref, digest := range sourceImages(t, binDir) {
		src, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		local := st.Registry + "/" + src.Context().RepositoryStr() + ":" + src.Identifier()
		r, err := name.ParseReference(local, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Head(r, remote.WithAuth(auth))
		if err != nil {
			t.Errorf("%s (%s) is not in the registry: %v", ref, local, err)
			continue
		}
		if desc.Digest.String() != digest {
			t.Errorf("%s has digest %s, the layout %s", local, desc.Digest, digest)
		}
	}
	if fileExists(filepath.Join(filepath.Dir(binDir), "_out", "images", "tensorflow-gpu", "index.json")) {
		gpu := st.Registry + "/tfk8s/tensorflow:2.21.0-gpu"
		if r, err := name.ParseReference(gpu, name.Insecure); err != nil {
			t.Fatal(err)
		} else if _, err := remote.Head(r, remote.WithAuth(auth)); err == nil {
			t.Errorf("up pushed the CUDA image (%s), which it pushes only when named", gpu)
		}
	}
}

// checkLoadedImageRuns saves the python image of the source tree, with a command of
// its own, as a docker save tarball named for another registry, loads it into the
// cluster, and runs a pod of that name with no command: the node finds it in the
// cluster's registry, its mirror for every registry, and runs the image's command.
func checkLoadedImageRuns(ctx context.Context, t *testing.T, opts localcluster.Options, kubeconfig, binDir string) {
	p, err := layout.FromPath(filepath.Join(filepath.Dir(binDir), "_out", "images", "python"))
	if err != nil {
		t.Fatalf("no python image in the source tree (make tensorflow-image builds it; make test runs it): %v", err)
	}
	base, err := pythonImage(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := base.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Config.Cmd = []string{"python3", "-c", "print('hello from a loaded image')"}
	img, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "registry.example.com/e2e/hello:1"
	saved := filepath.Join(t.TempDir(), "hello.tar")
	if err := tarball.WriteToFile(saved, name.MustParseReference(ref), img); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := localcluster.Load(ctx, opts, []string{saved}, "", &out); err != nil {
		t.Fatalf("local load: %v", err)
	}
	t.Logf("local load: %s", out.String())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-loaded", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "hello", Image: ref}},
		},
	}
	cs := clientset(t, kubeconfig)
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	var got *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && (got.Status.Phase == corev1.PodSucceeded || got.Status.Phase == corev1.PodFailed), nil
	})
	logs, lerr := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || got.Status.Phase != corev1.PodSucceeded || !strings.Contains(string(logs), "hello from a loaded image") {
		t.Fatalf("pod of %s: %v, status %+v; logs (%v):\n%s", ref, err, got.Status, lerr, logs)
	}
	if id := got.Status.ContainerStatuses[0].ImageID; !strings.HasPrefix(id, "registry.example.com/e2e/hello@sha256:") {
		t.Errorf("imageID %q, want the loaded image's digest", id)
	}
	_ = cs.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

// pythonImage is the node's platform's image of the python layout's index.
func pythonImage(p layout.Path) (v1.Image, error) {
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil || len(m.Manifests) == 0 {
		return nil, fmt.Errorf("reading the python layout: %v", err)
	}
	idx, err := outer.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the python layout has no linux/%s image", runtime.GOARCH)
}

// sourceImages maps the reference of each image of the source tree's _out/images
// (each layout directory's one image, tagged as make images tags them) to its digest,
// leaving out those up pushes only on request (make tensorflow-gpu-image's).
func sourceImages(t *testing.T, binDir string) map[string]string {
	t.Helper()
	root := filepath.Join(filepath.Dir(binDir), "_out", "images")
	dirs, _ := os.ReadDir(root)
	images := map[string]string{}
	for _, d := range dirs {
		p, err := layout.FromPath(filepath.Join(root, d.Name()))
		if err != nil {
			continue
		}
		idx, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, desc := range m.Manifests {
			// The CUDA image goes into a cluster only when named (tfk8s local load).
			if desc.Annotations["io.tfk8s.local.load"] == "explicit" {
				continue
			}
			ref := desc.Annotations["org.opencontainers.image.ref.name"]
			if !strings.Contains(ref, "/") {
				ref = "ghcr.io/tfk8s/" + d.Name() + ":" + ref
			}
			images[ref] = desc.Digest.String()
		}
	}
	if _, ok := images[version.Image("tfk8s-agent")]; !ok && len(images) > 0 {
		t.Logf("%s holds no %s: make images has not run since the version changed", root, version.Image("tfk8s-agent"))
	}
	return images
}
