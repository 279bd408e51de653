//go:build !sdk

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestDashboardRefusesAnOpenAddress: the local dashboard, which acts with the user's
// kubeconfig and signs nobody in, refuses to listen beyond loopback, naming the flag;
// a bad S3 endpoint or trusted proxy is refused naming its flag too.
func TestDashboardRefusesAnOpenAddress(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"dashboard --address 0.0.0.0:8686", "--address 0.0.0.0:8686: the local dashboard acts with your kubeconfig"},
		{"dashboard --address :8686", "only --in-cluster, where each user signs in, may listen elsewhere"},
		{"dashboard --address 192.0.2.1:8686", "listens on a loopback address only"},
		{"dashboard --in-cluster --address 0.0.0.0:0 --allowed-s3-endpoint minio", `--allowed-s3-endpoint "minio": want host:port`},
		{"dashboard --in-cluster --address 0.0.0.0:0 --trusted-proxy ingress", `--trusted-proxy "ingress": want an address or a CIDR`},
	} {
		var out, errOut bytes.Buffer
		env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			Getenv: func(string) string { return "" }}
		code := Main(context.Background(), strings.Fields(tc.args), env)
		if code == 0 || !strings.Contains(errOut.String(), tc.want) || out.Len() > 0 {
			t.Errorf("tfk8s %s: exit %d, stderr %q, stdout %q; want an error with %q", tc.args, code, errOut.String(), out.String(), tc.want)
		}
	}
}
