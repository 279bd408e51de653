package node

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func dnsPod(mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-worker-0", Namespace: "ns1"}}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

func TestRenderHosts(t *testing.T) {
	const header = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{
			name: "name only",
			pod:  dnsPod(nil),
			want: header + "10.244.0.5\tjob-worker-0\n",
		},
		{
			name: "hostname and subdomain",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.Hostname, p.Spec.Subdomain = "w0", "job"
			}),
			want: header + "10.244.0.5\tw0.job.ns1.svc.cluster.local\tw0\n",
		},
		{
			name: "host aliases",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"a", "b"}}}
			}),
			want: header + "10.244.0.5\tjob-worker-0\n\n# Entries added by HostAliases.\n10.1.2.3\ta\tb\n",
		},
		{
			name: "host network keeps the host's file",
			pod:  dnsPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			want: "127.0.0.1 localhost myhost\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := string(renderHosts(tc.pod, "10.244.0.5", "cluster.local", []byte("127.0.0.1 localhost myhost")))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodHostnames(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	cases := []struct {
		name               string
		pod                *corev1.Pod
		wantHost, wantFQDN string
		wantUTS            string
	}{
		{name: "pod name", pod: dnsPod(nil), wantHost: "job-worker-0", wantUTS: "job-worker-0"},
		{name: "long name trimmed", pod: dnsPod(func(p *corev1.Pod) { p.Name = long }), wantHost: strings.Repeat("a", 62), wantUTS: strings.Repeat("a", 62)},
		{
			name:     "subdomain",
			pod:      dnsPod(func(p *corev1.Pod) { p.Spec.Subdomain = "job" }),
			wantHost: "job-worker-0", wantFQDN: "job-worker-0.job.ns1.svc.cluster.local", wantUTS: "job-worker-0",
		},
		{
			name: "hostname as FQDN",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "job", ptr.To(true)
			}),
			wantHost: "job-worker-0", wantFQDN: "job-worker-0.job.ns1.svc.cluster.local", wantUTS: "job-worker-0.job.ns1.svc.cluster.local",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, fqdn := podHostnames(tc.pod, "cluster.local")
			if host != tc.wantHost || fqdn != tc.wantFQDN {
				t.Errorf("got %q %q, want %q %q", host, fqdn, tc.wantHost, tc.wantFQDN)
			}
			if got := utsHostname(tc.pod, "cluster.local"); got != tc.wantUTS {
				t.Errorf("UTS hostname %q, want %q", got, tc.wantUTS)
			}
		})
	}
}

func TestPodResolvConf(t *testing.T) {
	host := parseResolvConf([]byte("# comment\nnameserver 192.168.1.1\nsearch corp.example\noptions edns0\n"))
	clusterSearch := []string{"ns1.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	cases := []struct {
		name       string
		pod        *corev1.Pod
		clusterDNS []string
		want       resolvConf
	}{
		{
			name:       "cluster first",
			pod:        dnsPod(nil),
			clusterDNS: []string{"10.96.0.10"},
			want: resolvConf{
				Nameservers: []string{"10.96.0.10"},
				Searches:    append(clusterSearch, "corp.example"),
				Options:     []string{"ndots:5"},
			},
		},
		{
			name: "cluster first without cluster DNS falls back to the host",
			pod:  dnsPod(nil),
			want: resolvConf{Nameservers: []string{"192.168.1.1"}, Searches: []string{"corp.example"}, Options: []string{"edns0"}},
		},
		{
			name:       "host network",
			pod:        dnsPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			clusterDNS: []string{"10.96.0.10"},
			want:       resolvConf{Nameservers: []string{"192.168.1.1"}, Searches: []string{"corp.example"}, Options: []string{"edns0"}},
		},
		{
			name: "host network with ClusterFirstWithHostNet",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.HostNetwork, p.Spec.DNSPolicy = true, corev1.DNSClusterFirstWithHostNet
			}),
			clusterDNS: []string{"10.96.0.10"},
			want: resolvConf{
				Nameservers: []string{"10.96.0.10"},
				Searches:    append(clusterSearch, "corp.example"),
				Options:     []string{"ndots:5"},
			},
		},
		{
			name: "none with dnsConfig",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.DNSPolicy = corev1.DNSNone
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"1.1.1.1"},
					Searches:    []string{"a.example"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}},
				}
			}),
			clusterDNS: []string{"10.96.0.10"},
			want:       resolvConf{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:2"}},
		},
		{
			name: "dnsConfig merges and overrides options",
			pod: dnsPod(func(p *corev1.Pod) {
				p.Spec.DNSConfig = &corev1.PodDNSConfig{
					Nameservers: []string{"10.96.0.10", "1.1.1.1", "8.8.8.8", "9.9.9.9"},
					Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "rotate"}},
				}
			}),
			clusterDNS: []string{"10.96.0.10"},
			want: resolvConf{
				Nameservers: []string{"10.96.0.10", "1.1.1.1", "8.8.8.8"},
				Searches:    append(clusterSearch, "corp.example"),
				Options:     []string{"ndots:1", "rotate"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := podResolvConf(tc.pod, tc.clusterDNS, "cluster.local", host)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resolv.conf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolvConfRender(t *testing.T) {
	rc := resolvConf{Nameservers: []string{"10.96.0.10"}, Searches: []string{"a", "b"}, Options: []string{"ndots:5"}}
	want := "search a b\nnameserver 10.96.0.10\noptions ndots:5\n"
	if got := string(rc.render()); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if diff := cmp.Diff(rc, parseResolvConf(rc.render())); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
