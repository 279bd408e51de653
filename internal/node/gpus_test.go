package node

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func gpuContainer(name string, n int64) corev1.Container {
	c := corev1.Container{Name: name}
	if n > 0 {
		c.Resources.Limits = corev1.ResourceList{GPUResource: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	return c
}

func TestGPUAllocation(t *testing.T) {
	g := newGPUAllocator(3)
	a, err := g.allocate("a", 2)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := g.allocate("a", 2); !cmp.Equal(a, again) {
		t.Errorf("a got %v then %v", a, again)
	}
	if _, err := g.allocate("b", 2); err == nil {
		t.Error("b got 2 of the 1 free GPU")
	}
	b, err := g.allocate("b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1}, a); diff != "" {
		t.Errorf("a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2}, b); diff != "" {
		t.Errorf("b (-want +got):\n%s", diff)
	}
	g.release("a")
	c, _ := g.allocate("c", 1)
	if diff := cmp.Diff([]int{0}, c); diff != "" {
		t.Errorf("c after a's release (-want +got):\n%s", diff)
	}
}

func TestContainerGPUs(t *testing.T) {
	cases := []struct {
		name      string
		pod       corev1.PodSpec
		indices   []int
		wantCount int
		want      map[string][]int
	}{
		{
			name:      "containers get disjoint slices",
			pod:       corev1.PodSpec{Containers: []corev1.Container{gpuContainer("a", 1), gpuContainer("none", 0), gpuContainer("b", 2)}},
			indices:   []int{4, 5, 6},
			wantCount: 3,
			want:      map[string][]int{"a": {4}, "b": {5, 6}},
		},
		{
			name: "init containers reuse the first",
			pod: corev1.PodSpec{
				InitContainers: []corev1.Container{gpuContainer("init", 2)},
				Containers:     []corev1.Container{gpuContainer("a", 1)},
			},
			indices:   []int{1, 2},
			wantCount: 2,
			want:      map[string][]int{"init": {1, 2}, "a": {1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.pod}
			if got := podGPUCount(pod); got != tc.wantCount {
				t.Errorf("pod count %d, want %d", got, tc.wantCount)
			}
			if diff := cmp.Diff(tc.want, containerGPUs(pod, tc.indices)); diff != "" {
				t.Errorf("split (-want +got):\n%s", diff)
			}
		})
	}
	env := gpuEnv([]int{0, 3})
	if env[0].Value != "0,3" || env[1].Name != "CUDA_VISIBLE_DEVICES" || env[1].Value != "0,3" {
		t.Errorf("env %v", env)
	}
}
