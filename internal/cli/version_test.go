package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tfk8s/tfk8s/internal/tfjob"
	"github.com/tfk8s/tfk8s/internal/version"
)

// TestVersionWithoutCluster: with no cluster answering, tfk8s version prints its own
// version, says the server's is unknown and why, and exits 0; -o json says the same.
func TestVersionWithoutCluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		var out, errOut bytes.Buffer
		env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
			Getenv: func(string) string { return "" }, Name: "tfk8s"}
		if code := Main(context.Background(), append([]string{"--kubeconfig", kubeconfig, "version"}, args...), env); code != 0 {
			t.Fatalf("tfk8s version %v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	table := run()
	if want := "Client: " + version.Version; !strings.HasPrefix(table, want) {
		t.Errorf("tfk8s version printed %q, want it to start with %q", table, want)
	}
	if !strings.Contains(table, "Server: unknown: ") || !strings.Contains(table, "connection refused") {
		t.Errorf("tfk8s version printed %q, want the server unknown for the refused connection", table)
	}
	var info versionInfo
	if err := json.Unmarshal([]byte(run("-o", "json")), &info); err != nil {
		t.Fatal(err)
	}
	if info.Client.Version != version.Version || info.Server != nil || !strings.Contains(info.ServerError, "connection refused") {
		t.Errorf("tfk8s version -o json: %+v, want client %s, no server and the refused connection", info, version.Version)
	}
}

// TestReadServerVersion reads the tag of the controller container's image, and says
// why not when the Deployment is missing or may not be read (a fake client stands for
// the API server's refusals).
func TestReadServerVersion(t *testing.T) {
	deployment := func(image string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: tfjob.InstallNamespace, Name: tfjob.ControllerDeployment},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "sidecar", Image: "example.com/sidecar:v9.9.9"},
				{Name: controllerContainer, Image: image},
			}}}},
		}
	}
	forbidden := func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, tfjob.ControllerDeployment, nil)
	}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		forbid  bool
		want    *serverVersion
		wantErr string
	}{
		{name: "tag", objects: []runtime.Object{deployment("127.0.0.1:5000/rel/tfk8s-controller:v0.2.0")},
			want: &serverVersion{Version: "v0.2.0", Image: "127.0.0.1:5000/rel/tfk8s-controller:v0.2.0", Deployment: "tfk8s-system/tfk8s-controller"}},
		{name: "tag and digest", objects: []runtime.Object{deployment("ghcr.io/tfk8s/tfk8s-controller:v0.2.0@sha256:0123")},
			want: &serverVersion{Version: "v0.2.0", Image: "ghcr.io/tfk8s/tfk8s-controller:v0.2.0@sha256:0123", Deployment: "tfk8s-system/tfk8s-controller"}},
		{name: "digest only", objects: []runtime.Object{deployment("ghcr.io/tfk8s/tfk8s-controller@sha256:0123")}, wantErr: "names no tag"},
		{name: "not installed", wantErr: "no deployment tfk8s-system/tfk8s-controller"},
		{name: "forbidden", forbid: true, wantErr: "takes get on deployments.apps in tfk8s-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(tc.objects...)
			if tc.forbid {
				kube.PrependReactor("get", "deployments", forbidden)
			}
			got, err := readServerVersion(context.Background(), kube, tfjob.InstallNamespace)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("server version (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionSkew(t *testing.T) {
	for _, tc := range []struct {
		client, server string
		warn           bool
	}{
		{"v0.2.0", "v0.2.0", false},
		{"v0.2.0", "v0.1.3", false},
		{"v0.2.0", "v0.3.0-rc.1", false},
		{"v0.1.0", "v0.3.0", true},
		{"v0.4.0", "v0.2.9", true},
		{"v1.2.0", "v2.2.0", true},
		{"v0.2.0", "latest", false},
	} {
		if got := versionSkew(tc.client, tc.server); (got != "") != tc.warn {
			t.Errorf("versionSkew(%s, %s) = %q, want a warning: %v", tc.client, tc.server, got, tc.warn)
		}
	}
}
