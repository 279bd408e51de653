package node

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestBuildSpec(t *testing.T) {
	volume := specs.Mount{Destination: "/data", Type: "bind", Source: "/state/pods/u/volumes/data", Options: []string{"rbind", "rw"}}
	cases := []struct {
		name  string
		cfg   containerConfig
		check func(t *testing.T, s *specs.Spec)
	}{
		{
			name: "pod network",
			cfg: containerConfig{
				Rootfs: "/state/rootfs", Args: []string{"sh", "-c", "true"}, Env: []string{"A=1"},
				Hostname: "w0", NetNSPath: "/var/run/netns/tfk8s-x", Mounts: []specs.Mount{volume},
				CgroupsPath: "/tfk8s/u/main/run", MaskedPaths: []string{"/state"},
			},
			check: func(t *testing.T, s *specs.Spec) {
				if diff := cmp.Diff(&specs.Root{Path: "/state/rootfs", Readonly: true}, s.Root); diff != "" {
					t.Errorf("root (-want +got):\n%s", diff)
				}
				want := []specs.LinuxNamespace{
					{Type: specs.MountNamespace}, {Type: specs.PIDNamespace}, {Type: specs.IPCNamespace},
					{Type: specs.UTSNamespace}, {Type: specs.NetworkNamespace, Path: "/var/run/netns/tfk8s-x"},
				}
				if diff := cmp.Diff(want, s.Linux.Namespaces); diff != "" {
					t.Errorf("namespaces (-want +got):\n%s", diff)
				}
				var dests []string
				for _, m := range s.Mounts {
					dests = append(dests, m.Destination)
				}
				wantDests := []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/tmp", "/data"}
				if diff := cmp.Diff(wantDests, dests); diff != "" {
					t.Errorf("mounts (-want +got):\n%s", diff)
				}
				if s.Mounts[5].Type != "sysfs" {
					t.Errorf("/sys is %s, want a fresh sysfs", s.Mounts[5].Type)
				}
				if s.Hostname != "w0" || s.Process.Cwd != "/" || s.Process.Terminal {
					t.Errorf("hostname %q cwd %q terminal %t", s.Hostname, s.Process.Cwd, s.Process.Terminal)
				}
				if got := s.Linux.MaskedPaths[len(s.Linux.MaskedPaths)-1]; got != "/state" {
					t.Errorf("last masked path %q, want /state", got)
				}
				if diff := cmp.Diff(defaultCapabilities, s.Process.Capabilities.Effective); diff != "" {
					t.Errorf("capabilities (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "host network, PID and IPC",
			cfg:  containerConfig{Rootfs: "/r", Args: []string{"true"}, HostPID: true, HostIPC: true},
			check: func(t *testing.T, s *specs.Spec) {
				if diff := cmp.Diff([]specs.LinuxNamespace{{Type: specs.MountNamespace}}, s.Linux.Namespaces); diff != "" {
					t.Errorf("namespaces (-want +got):\n%s", diff)
				}
				if s.Mounts[5].Type != "bind" || s.Mounts[5].Source != "/sys" {
					t.Errorf("/sys mount %+v, want the host's bound", s.Mounts[5])
				}
			},
		},
		{
			name: "resources and devices",
			cfg: containerConfig{
				Rootfs: "/r", Args: []string{"true"}, CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000,
				Devices: []specs.LinuxDevice{{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0}},
			},
			check: func(t *testing.T, s *specs.Spec) {
				r := s.Linux.Resources
				if *r.CPU.Shares != 512 || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 {
					t.Errorf("cpu %+v", r.CPU)
				}
				if len(r.Devices) != 2 || r.Devices[0].Allow || !r.Devices[1].Allow || *r.Devices[1].Major != 195 {
					t.Errorf("device rules %+v", r.Devices)
				}
				if r.Memory != nil {
					t.Errorf("memory %+v, want none", r.Memory)
				}
			},
		},
		{
			name: "privileged",
			cfg:  containerConfig{Rootfs: "/r", Args: []string{"true"}, Privileged: true},
			check: func(t *testing.T, s *specs.Spec) {
				if len(s.Process.Capabilities.Bounding) != len(allCapabilities) || s.Linux.MaskedPaths != nil {
					t.Errorf("privileged: %d capabilities, masked %v", len(s.Process.Capabilities.Bounding), s.Linux.MaskedPaths)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, buildSpec(tc.cfg)) })
	}
}

func TestCapabilities(t *testing.T) {
	cases := []struct {
		name      string
		add, drop []string
		want      []string
	}{
		{name: "drop all, add one", add: []string{"NET_BIND_SERVICE"}, drop: []string{"ALL"}, want: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "drop one", drop: []string{"CAP_KILL"}, want: func() []string {
			var w []string
			for _, c := range defaultCapabilities {
				if c != "CAP_KILL" {
					w = append(w, c)
				}
			}
			return w
		}()},
		{name: "add a new one", add: []string{"NET_ADMIN"}, want: append(append([]string{}, defaultCapabilities...), "CAP_NET_ADMIN")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, capabilities(false, tc.add, tc.drop)); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyContainer(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), SupplementalGroups: []int64{5},
		Sysctls: []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
	}}}
	cases := []struct {
		name    string
		c       corev1.Container
		want    containerConfig
		wantErr bool
	}{
		{
			name: "command, args and identity",
			c: corev1.Container{
				Name: "main", Command: []string{"python3", "-c"}, Args: []string{"print('$(GREETING)')"}, WorkingDir: "/work",
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), AllowPrivilegeEscalation: ptr.To(false)},
			},
			want: containerConfig{
				Args: []string{"python3", "-c", "print('hello')"}, Env: []string{"GREETING=hello"}, Cwd: "/work",
				UID: 0, GID: 1000, AdditionalGids: []uint32{5}, NoNewPrivileges: true,
				Sysctls: map[string]string{"net.core.somaxconn": "1024"},
			},
		},
		{
			name: "args alone are the command",
			c:    corev1.Container{Name: "main", Args: []string{"sleep", "1"}},
			want: containerConfig{
				Args: []string{"sleep", "1"}, Env: []string{"GREETING=hello"}, UID: 1000, GID: 1000, AdditionalGids: []uint32{5},
				Sysctls: map[string]string{"net.core.somaxconn": "1024"},
			},
		},
		{
			name: "cpu request and limit",
			c: corev1.Container{Name: "main", Command: []string{"true"}, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}},
			want: containerConfig{
				Args: []string{"true"}, Env: []string{"GREETING=hello"}, UID: 1000, GID: 1000, AdditionalGids: []uint32{5},
				Sysctls:   map[string]string{"net.core.somaxconn": "1024"},
				CPUShares: 256, CPUQuota: 100000, CPUPeriod: 100000,
			},
		},
	}
	img := &image{root: t.TempDir()}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got containerConfig
			err := applyContainer(&got, pod, &tc.c, []string{"GREETING=hello"}, img, "p_ns(uid)")
			if !configErrorAsWanted(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
