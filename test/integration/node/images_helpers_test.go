package node_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/node"
)

// The node that pulls images, beside the one the other tests share.
const (
	imageNodeName = "tfk8s-test-node-4"
	imageBridge   = "tfk8st3"
)

// tarEntry is one entry of a crafted layer.
type tarEntry struct {
	name, body, link string
	mode             int64
	typ              byte
	uid, gid         int
}

// file, dir and symlink are tar entries owned by root.
func file(name, body string, mode int64) tarEntry {
	return tarEntry{name: name, body: body, mode: mode, typ: tar.TypeReg}
}
func dir(name string) tarEntry { return tarEntry{name: name, mode: 0o755, typ: tar.TypeDir} }

// layer builds a gzip-compressed layer from entries, in order.
func layer(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link, Size: int64(len(e.body)),
			Uid: e.uid, Gid: e.gid, ModTime: time.Unix(1700000000, 0)}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)[:hdr.Size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var probe struct {
	once sync.Once
	data []byte
	err  error
}

// probeBinary is testdata/imgprobe, built static.
func probeBinary(t *testing.T) []byte {
	t.Helper()
	probe.once.Do(func() {
		out := filepath.Join(os.TempDir(), "tfk8s-imgprobe-"+strings.ReplaceAll(t.Name(), "/", "-"))
		cmd := exec.Command("go", "build", "-o", out, "./testdata/imgprobe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			probe.err = &buildError{err: err, out: string(msg)}
			return
		}
		defer os.Remove(out)
		probe.data, probe.err = os.ReadFile(out)
	})
	if probe.err != nil {
		t.Fatal(probe.err)
	}
	return probe.data
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "building imgprobe: " + e.err.Error() + "\n" + e.out }

// probeImage is the test image: a base layer with the probe, users and groups and a
// /data directory, then a layer that whites out /data/gone and makes /data/sub opaque
// (replacing old with new); cfg is its configuration.
func probeImage(t *testing.T, cfg v1.Config) v1.Image {
	t.Helper()
	base := layer(t,
		dir("bin/"), file("bin/probe", string(probeBinary(t)), 0o755),
		dir("etc/"),
		file("etc/passwd", "root:x:0:0:root:/root:/bin/probe\napp:x:1234:2345::/home/app:/bin/probe\n", 0o644),
		file("etc/group", "root:x:0:\napp:x:2345:\nextra:x:3456:app\n", 0o644),
		dir("home/"), tarEntry{name: "home/app/", mode: 0o750, typ: tar.TypeDir, uid: 1234, gid: 2345},
		dir("data/"), file("data/keep", "k", 0o644), file("data/gone", "g", 0o644),
		dir("data/sub/"), file("data/sub/old", "o", 0o644),
	)
	top := layer(t,
		file("data/.wh.gone", "", 0o644),
		dir("data/sub/"), file("data/sub/.wh..wh..opq", "", 0o644), file("data/sub/new", "n", 0o644),
	)
	img, err := mutate.AppendLayers(empty.Image, base, top)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", runtime.GOARCH, cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// startImageNode runs a node that pulls images, with ghcr.io mirrored to mirror, a
// fresh image directory (returned), and the tests' back-off; it stops with the test.
func startImageNode(t *testing.T, mirror string) string {
	t.Helper()
	state, err := os.MkdirTemp("/var/lib", "tfk8s-node-test-4-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Cleanup(func() {
		_ = clientset.CoreV1().Nodes().Delete(context.Background(), imageNodeName, metav1.DeleteOptions{})
	})
	imageDir := filepath.Join(state, "images")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, node.Options{
			Config: cp.Config, NodeName: imageNodeName, StateDir: state, PodCIDR: "10.253.0.0/24", Bridge: imageBridge,
			RestartBackoff: testBackoff, ShutdownGracePeriod: 5 * time.Second, ImageDir: imageDir,
			RegistryMirrors: map[string]string{"ghcr.io": "http://" + mirror},
			Log:             zap.New(zap.WriteTo(nodeLog2(t))),
		})
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("image node: %v", err)
			}
		case <-time.After(time.Minute):
			t.Error("the image node did not stop within a minute")
		}
		if left := leftovers(state, imageBridge, nil); len(left) > 0 {
			t.Errorf("the image node left behind: %v", left)
		}
	})
	if err := waitNodeReady(ctx, imageNodeName, done); err != nil {
		t.Fatal(err)
	}
	return imageDir
}

// imagePod is a pod for the image node whose container "main" runs image as the
// image says, listing /data and /data/sub.
func imagePod(name, ns, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: imageNodeName},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{{Name: "LIST", Value: "/data /data/sub"}, {Name: "OVERRIDE", Value: "container"}},
			}},
		},
	}
}

// podEvents are the messages of the pod's events with reason, oldest first.
func podEvents(t *testing.T, ns, pod, reason string) []string {
	t.Helper()
	list, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range list.Items {
		if e.Reason == reason {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

// waitEvent waits until the pod has an event with reason whose message contains
// text, and returns that message.
func waitEvent(t *testing.T, ns, pod, reason, text string) string {
	t.Helper()
	var found string
	waitPod(t, ns, pod, time.Minute, "given a "+reason+" event", func(*corev1.Pod) bool {
		for _, m := range podEvents(t, ns, pod, reason) {
			if strings.Contains(m, text) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// waitingReason is the waiting reason and message of a container, "" when not waiting.
func waitingReason(statuses []corev1.ContainerStatus, name string) (string, string) {
	if w := containerStatus(statuses, name).State.Waiting; w != nil {
		return w.Reason, w.Message
	}
	return "", ""
}
