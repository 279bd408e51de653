package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestCheckAddress(t *testing.T) {
	c := &corev1.Container{Name: "main", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	cases := []struct {
		host    string
		port    intstr.IntOrString
		want    string
		wantErr bool
	}{
		{port: intstr.FromInt32(2222), want: "10.244.0.5:2222"},
		{port: intstr.FromString("web"), want: "10.244.0.5:8080"},
		{host: "127.0.0.1", port: intstr.FromString("9090"), want: "127.0.0.1:9090"},
		{port: intstr.FromString("nope"), wantErr: true},
	}
	for _, tc := range cases {
		got, err := checkAddress(c, "10.244.0.5", tc.host, tc.port)
		if tc.wantErr != (err != nil) || got != tc.want {
			t.Errorf("checkAddress(%q, %v) = %q, %v; want %q, error %t", tc.host, tc.port.String(), got, err, tc.want, tc.wantErr)
		}
	}
}
