package node

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// fakeSources serves ConfigMaps and Secrets from maps.
type fakeSources struct {
	configMaps map[string]map[string]string
	secrets    map[string]map[string][]byte
}

func (f fakeSources) ConfigMap(name string) (*corev1.ConfigMap, error) {
	data, ok := f.configMaps[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &corev1.ConfigMap{Data: data}, nil
}

func (f fakeSources) Secret(name string) (*corev1.Secret, error) {
	data, ok := f.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	return &corev1.Secret{Data: data}, nil
}

func TestContainerEnv(t *testing.T) {
	src := fakeSources{
		configMaps: map[string]map[string]string{"cfg": {"MODE": "train", "bad key": "x", "LR": "0.1"}},
		secrets:    map[string]map[string][]byte{"creds": {"token": []byte("s3cr3t")}},
	}
	fields := podFields{
		PodIPs: []string{"10.244.0.7"}, HostIPs: []string{"10.244.0.1"},
		NodeAllocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "tf"}},
		Spec:       corev1.PodSpec{NodeName: "n1", ServiceAccountName: "default"},
	}
	base := []corev1.EnvVar{{Name: "PATH", Value: defaultPath}, {Name: "HOSTNAME", Value: "p"}}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	cases := []struct {
		name    string
		c       corev1.Container
		want    []string
		wantErr bool
	}{
		{
			name: "plain values and references",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "A", Value: "1"},
				{Name: "B", Value: "$(A)-$(MISSING)-$$(A)"},
				{Name: "PATH", Value: "/opt/bin:$(PATH)"},
			}},
			want: []string{"PATH=/opt/bin:" + defaultPath, "HOSTNAME=p", "A=1", "B=1-$(MISSING)-$(A)"},
		},
		{
			name: "field references",
			c: corev1.Container{Env: []corev1.EnvVar{
				fieldEnv("NAME", "metadata.name"), fieldEnv("NS", "metadata.namespace"),
				fieldEnv("IP", "status.podIP"), fieldEnv("HOST", "status.hostIP"),
				fieldEnv("NODE", "spec.nodeName"), fieldEnv("APP", "metadata.labels['app']"),
				fieldEnv("UID", "metadata.uid"),
			}},
			want: []string{"PATH=" + defaultPath, "HOSTNAME=p", "NAME=p", "NS=ns", "IP=10.244.0.7", "HOST=10.244.0.1", "NODE=n1", "APP=tf", "UID=u1"},
		},
		{
			name: "secret and configMap keys",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
				{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
				{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "x", Optional: ptr.To(true)}}},
			}},
			want: []string{"PATH=" + defaultPath, "HOSTNAME=p", "TOKEN=s3cr3t", "MODE=train"},
		},
		{
			name: "envFrom with prefix skips invalid keys, env overrides",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{
					{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
				},
				Env: []corev1.EnvVar{{Name: "CFG_LR", Value: "0.2"}},
			},
			want: []string{"PATH=" + defaultPath, "HOSTNAME=p", "CFG_LR=0.2", "CFG_MODE=train"},
		},
		{
			name: "resource references",
			c: corev1.Container{
				Name: "main",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
				},
				Env: []corev1.EnvVar{
					{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
					{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
						Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				},
			},
			want: []string{"PATH=" + defaultPath, "HOSTNAME=p", "CPU=2", "MEM_MI=8192"},
		},
		{
			name: "missing secret key is a configuration error",
			c: corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "nope"}}}}},
			wantErr: true,
		},
		{
			name:    "missing configMap in envFrom is a configuration error",
			c:       corev1.Container{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}}},
			wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.Spec.Containers = []corev1.Container{tc.c}
			got, err := containerEnv(p, &p.Spec.Containers[0], fields, src, base)
			if !configErrorAsWanted(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	cases := []struct{ in, want string }{
		{"$(A)", "x"},
		{"a$(A)b$(A)", "axbx"},
		{"$(EMPTY)|", "|"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"end$", "end$"},
	}
	for _, tc := range cases {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// configErrorAsWanted fails the test unless err is a configuration error exactly when
// one is wanted, and reports whether the case goes on to check a result.
func configErrorAsWanted(t *testing.T, err error, want bool) bool {
	t.Helper()
	switch {
	case want && !errors.Is(err, errConfig):
		t.Fatalf("error %v, want a configuration error", err)
	case !want && err != nil:
		t.Fatal(err)
	}
	return !want
}
