package node

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestAPIServiceEnv(t *testing.T) {
	s := apiService{clusterIP: netip.MustParseAddr("10.96.0.1"), port: 443, apiHost: "127.0.0.1", apiPort: 6443}
	for _, tc := range []struct {
		name        string
		svc         apiService
		hostNetwork bool
		want        []corev1.EnvVar
	}{
		{name: "pod network: the Service, as the kubelet writes it", svc: s, want: []corev1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: "10.96.0.1"},
			{Name: "KUBERNETES_SERVICE_PORT", Value: "443"},
			{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "443"},
			{Name: "KUBERNETES_PORT", Value: "tcp://10.96.0.1:443"},
			{Name: "KUBERNETES_PORT_443_TCP", Value: "tcp://10.96.0.1:443"},
			{Name: "KUBERNETES_PORT_443_TCP_PROTO", Value: "tcp"},
			{Name: "KUBERNETES_PORT_443_TCP_PORT", Value: "443"},
			{Name: "KUBERNETES_PORT_443_TCP_ADDR", Value: "10.96.0.1"},
		}},
		{name: "host network: the API server itself", svc: s, hostNetwork: true, want: []corev1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
			{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
			{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "6443"},
			{Name: "KUBERNETES_PORT", Value: "tcp://127.0.0.1:6443"},
			{Name: "KUBERNETES_PORT_6443_TCP", Value: "tcp://127.0.0.1:6443"},
			{Name: "KUBERNETES_PORT_6443_TCP_PROTO", Value: "tcp"},
			{Name: "KUBERNETES_PORT_6443_TCP_PORT", Value: "6443"},
			{Name: "KUBERNETES_PORT_6443_TCP_ADDR", Value: "127.0.0.1"},
		}},
		{name: "not looked up: nothing", svc: apiService{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.svc.env(tc.hostNetwork)); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	for _, tc := range []struct {
		url      string
		wantHost string
		wantPort int
		wantErr  bool
	}{
		{url: "https://127.0.0.1:6443", wantHost: "127.0.0.1", wantPort: 6443},
		{url: "https://api.example.com", wantHost: "api.example.com", wantPort: 443},
		{url: "https://[::1]:8443", wantHost: "::1", wantPort: 8443},
		{url: "", wantErr: true},
	} {
		host, port, err := hostPort(tc.url)
		if (err != nil) != tc.wantErr || host != tc.wantHost || port != tc.wantPort {
			t.Errorf("hostPort(%q) = %q, %d, %v; want %q, %d, error %v", tc.url, host, port, err, tc.wantHost, tc.wantPort, tc.wantErr)
		}
	}
}
