package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestProjectKeys(t *testing.T) {
	data := map[string][]byte{"a": []byte("1"), "b": []byte("2")}
	cases := []struct {
		name     string
		data     map[string][]byte
		items    []corev1.KeyToPath
		mode     *int32
		optional bool
		want     projection
		wantErr  bool
	}{
		{
			name: "every key at its name",
			data: data,
			want: projection{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}},
		},
		{
			name:  "items at their paths with modes",
			data:  data,
			items: []corev1.KeyToPath{{Key: "a", Path: "dir/x", Mode: ptr.To[int32](0o400)}},
			mode:  ptr.To[int32](0o600),
			want:  projection{"dir/x": {Data: []byte("1"), Mode: 0o400}},
		},
		{
			name:  "default mode",
			data:  data,
			items: []corev1.KeyToPath{{Key: "b", Path: "y"}},
			mode:  ptr.To[int32](0o600),
			want:  projection{"y": {Data: []byte("2"), Mode: 0o600}},
		},
		{name: "missing key", data: data, items: []corev1.KeyToPath{{Key: "c", Path: "c"}}, wantErr: true},
		{name: "missing key, optional", data: data, items: []corev1.KeyToPath{{Key: "c", Path: "c"}}, optional: true, want: projection{}},
		{name: "missing object", wantErr: true},
		{name: "missing object, optional", optional: true, want: projection{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := projection{}
			err := projectKeys(got, "ConfigMap", "cfg", tc.data, tc.items, tc.mode, tc.optional)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error %v, want error %t", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("projection (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestProjectDownwardAPI(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"b": "2", "a": "1"}}}
	got := projection{}
	err := projectDownwardAPI(got, pod, podFields{PodIPs: []string{"10.0.0.2"}}, []corev1.DownwardAPIVolumeFile{
		{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}, Mode: ptr.To[int32](0o440)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := projection{
		"labels": {Data: []byte("a=\"1\"\nb=\"2\""), Mode: 0o644},
		"ip":     {Data: []byte("10.0.0.2"), Mode: 0o440},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("projection (-want +got):\n%s", diff)
	}
	err = projectDownwardAPI(projection{}, pod, podFields{}, []corev1.DownwardAPIVolumeFile{
		{Path: "x", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}},
	}, nil)
	if err == nil {
		t.Error("an unsupported field path projected without error")
	}
}

func TestProjectionWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	p := projection{"a": {Data: []byte("1"), Mode: 0o400}, "sub/b": {Data: []byte("2"), Mode: 0o644}}
	if err := p.write(dir); err != nil {
		t.Fatal(err)
	}
	for rel, f := range p {
		fi, err := os.Stat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.Mode {
			t.Errorf("%s mode %v, want %v", rel, fi.Mode().Perm(), f.Mode)
		}
	}
	for _, bad := range []string{"../escape", "/abs", "a/../../b"} {
		if err := (projection{bad: {}}).write(dir); err == nil {
			t.Errorf("path %q written without error", bad)
		}
	}
}

func TestVolumeMounts(t *testing.T) {
	root := t.TempDir()
	paths := map[string]string{"data": filepath.Join(root, "data"), "cfg": filepath.Join(root, "cfg")}
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		mounts  []corev1.VolumeMount
		want    []specs.Mount
		wantErr bool
	}{
		{
			name: "parents first, read-only honoured",
			mounts: []corev1.VolumeMount{
				{Name: "cfg", MountPath: "/data/cfg", ReadOnly: true},
				{Name: "data", MountPath: "/data"},
			},
			want: []specs.Mount{
				{Destination: "/data", Type: "bind", Source: paths["data"], Options: []string{"rbind", "rw"}},
				{Destination: "/data/cfg", Type: "bind", Source: paths["cfg"], Options: []string{"rbind", "ro"}},
			},
		},
		{
			name:   "subPath and subPathExpr are created",
			mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "x/y"}, {Name: "data", MountPath: "/b", SubPathExpr: "$(POD_NAME)"}},
			want: []specs.Mount{
				{Destination: "/a", Type: "bind", Source: filepath.Join(paths["data"], "x/y"), Options: []string{"rbind", "rw"}},
				{Destination: "/b", Type: "bind", Source: filepath.Join(paths["data"], "p0"), Options: []string{"rbind", "rw"}},
			},
		},
		{name: "subPath escaping the volume", mounts: []corev1.VolumeMount{{Name: "data", MountPath: "/a", SubPath: "../x"}}, wantErr: true},
		{name: "unknown volume", mounts: []corev1.VolumeMount{{Name: "nope", MountPath: "/a"}}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumeMounts(&corev1.Container{VolumeMounts: tc.mounts}, paths, []string{"POD_NAME=p0"})
			if !configErrorAsWanted(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			for _, m := range got {
				if _, err := os.Stat(m.Source); err != nil {
					t.Errorf("source %s: %v", m.Source, err)
				}
			}
		})
	}
}

func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	typ := func(tp corev1.HostPathType) *corev1.HostPathType { return &tp }
	cases := []struct {
		name    string
		hp      corev1.HostPathVolumeSource
		wantErr bool
	}{
		{name: "unchecked", hp: corev1.HostPathVolumeSource{Path: filepath.Join(dir, "absent")}},
		{name: "directory or create", hp: corev1.HostPathVolumeSource{Path: filepath.Join(dir, "new/dir"), Type: typ(corev1.HostPathDirectoryOrCreate)}},
		{name: "file or create", hp: corev1.HostPathVolumeSource{Path: filepath.Join(dir, "new/file"), Type: typ(corev1.HostPathFileOrCreate)}},
		{name: "directory exists", hp: corev1.HostPathVolumeSource{Path: dir, Type: typ(corev1.HostPathDirectory)}},
		{name: "directory missing", hp: corev1.HostPathVolumeSource{Path: filepath.Join(dir, "nope"), Type: typ(corev1.HostPathDirectory)}, wantErr: true},
		{name: "not a file", hp: corev1.HostPathVolumeSource{Path: dir, Type: typ(corev1.HostPathFile)}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkHostPath(&tc.hp); tc.wantErr != (err != nil) {
				t.Errorf("error %v, want error %t", err, tc.wantErr)
			}
		})
	}
}
