package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestContainerProcess(t *testing.T) {
	img := v1.Config{Entrypoint: []string{"/entry", "$(X)"}, Cmd: []string{"cmd", "$(X)"}}
	lookup := envLookup([]string{"X=x"})
	cases := []struct {
		name          string
		command, args []string
		img           v1.Config
		want          []string
	}{
		{name: "neither: entrypoint and cmd, unexpanded", img: img, want: []string{"/entry", "$(X)", "cmd", "$(X)"}},
		{name: "command replaces entrypoint and drops cmd", command: []string{"/bin/sh", "$(X)"}, img: img, want: []string{"/bin/sh", "x"}},
		{name: "command and args", command: []string{"/bin/sh"}, args: []string{"-c", "$(X)"}, img: img, want: []string{"/bin/sh", "-c", "x"}},
		{name: "args alone replace cmd", args: []string{"a", "$(X)"}, img: img, want: []string{"/entry", "$(X)", "a", "x"}},
		{name: "args without entrypoint", args: []string{"sleep", "1"}, want: []string{"sleep", "1"}},
		{name: "cmd alone", img: v1.Config{Cmd: []string{"/cmd"}}, want: []string{"/cmd"}},
		{name: "nothing at all", want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := containerProcess(&corev1.Container{Command: tc.command, Args: tc.args}, tc.img, lookup)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("process (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageEnv(t *testing.T) {
	got := imageEnv(v1.Config{Env: []string{"A=1", "PATH=/opt/bin", "B=x=y"}})
	want := []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "PATH", Value: "/opt/bin"}, {Name: "B", Value: "x=y"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if got := imageEnv(v1.Config{Env: []string{"A=1"}}); got[0] != (corev1.EnvVar{Name: "PATH", Value: defaultPath}) {
		t.Errorf("an image without PATH: %v, want the default PATH first", got)
	}
}

// imageRoot writes an image root with /etc/passwd and /etc/group.
func imageRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(root, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n# comment\napp:x:1234:2345::/home/app:/bin/sh\n")
	writeTestFile(t, filepath.Join(root, "etc/group"), "root:x:0:\napp:x:2345:\nextra:x:3456:other,app\nstaff:x:50:\n")
	return root
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolveUser(t *testing.T) {
	root := imageRoot(t)
	cases := []struct {
		user    string
		want    identity
		wantErr string
	}{
		{user: "", want: identity{}},
		{user: "app", want: identity{UID: 1234, GID: 2345, Groups: []uint32{3456}, Name: "app"}},
		{user: "1234", want: identity{UID: 1234, GID: 2345, Groups: []uint32{3456}}},
		{user: "999", want: identity{UID: 999}},
		{user: "999:77", want: identity{UID: 999, GID: 77}},
		{user: "app:staff", want: identity{UID: 1234, GID: 50, Groups: []uint32{3456}, Name: "app"}},
		{user: "1234:staff", want: identity{UID: 1234, GID: 50, Groups: []uint32{3456}}},
		{user: "nobody", wantErr: `user "nobody" of the image not found in its /etc/passwd`},
		{user: "app:nogroup", wantErr: `group "nogroup" of the image not found in its /etc/group`},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			got, err := resolveUser(root, tc.user)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveUserStaysInTheRoot: an image's /etc/passwd that is a symlink to the
// host's is read inside the image, where it does not exist.
func TestResolveUserStaysInTheRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveUser(root, "root"); err == nil {
		t.Error("resolved root through a symlink to the host's /etc")
	}
}

func TestApplyIdentity(t *testing.T) {
	img := &image{root: imageRoot(t), config: v1.Config{User: "app"}}
	rootImg := &image{root: imageRoot(t), config: v1.Config{User: "0"}}
	const ref = "p_ns(uid)"
	cases := []struct {
		name     string
		img      *image
		psc      *corev1.PodSecurityContext
		sc       *corev1.SecurityContext
		want     containerConfig
		wantErr  string
		isConfig bool
	}{
		{name: "image user", img: img, want: containerConfig{UID: 1234, GID: 2345, AdditionalGids: []uint32{3456}}},
		{name: "runAsUser wins, group from the image's passwd", img: img, psc: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)},
			want: containerConfig{UID: 0, GID: 0}},
		{name: "runAsGroup wins", img: img, sc: &corev1.SecurityContext{RunAsGroup: ptr.To[int64](7)},
			want: containerConfig{UID: 1234, GID: 7, AdditionalGids: []uint32{3456}}},
		{name: "runAsNonRoot with a named user", img: img, psc: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, isConfig: true,
			wantErr: `container has runAsNonRoot and image has non-numeric user (app), cannot verify user is non-root (pod: "p_ns(uid)", container: main)`},
		{name: "runAsNonRoot with a root image", img: rootImg, sc: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}, isConfig: true,
			wantErr: `container has runAsNonRoot and image will run as root (pod: "p_ns(uid)", container: main)`},
		{name: "runAsNonRoot with runAsUser 0", img: img, sc: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, isConfig: true,
			wantErr: `container's runAsUser breaks non-root policy (pod: "p_ns(uid)", container: main)`},
		{name: "runAsNonRoot satisfied by runAsUser", img: rootImg, sc: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1234)},
			want: containerConfig{UID: 1234, GID: 2345}},
		{name: "unknown image user", img: &image{root: imageRoot(t), config: v1.Config{User: "ghost"}},
			wantErr: `container main: user "ghost" of the image not found in its /etc/passwd`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: tc.psc}}
			var got containerConfig
			err := applyIdentity(&got, pod, &corev1.Container{Name: "main", SecurityContext: tc.sc}, tc.img, ref)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || errors.Is(err, errConfig) != tc.isConfig {
					t.Fatalf("error %v (configuration error: %t), want %q (%t)", err, errors.Is(err, errConfig), tc.wantErr, tc.isConfig)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNoProcess: an image with neither entrypoint nor cmd and a container without a
// command cannot be created (CreateContainerError), naming the container and image.
func TestNoProcess(t *testing.T) {
	var cfg containerConfig
	err := applyContainer(&cfg, &corev1.Pod{}, &corev1.Container{Name: "main", Image: "ghcr.io/x/empty:1"}, nil, &image{root: t.TempDir()}, "p")
	if err == nil || errors.Is(err, errConfig) || !strings.Contains(err.Error(), "container main: image ghcr.io/x/empty:1 has no entrypoint and no cmd") {
		t.Errorf("error %v, want a creation error naming container and image", err)
	}
}
