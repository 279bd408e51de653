package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// TestClassifyError: each kind of failure a program tells apart, from the errors the
// CLI meets (fakes of the API server's, S3's and the network's).
func TestClassifyError(t *testing.T) {
	tfjobs := schema.GroupResource{Group: "tfk8s.io", Resource: "tfjobs"}
	dial := func(host string, cause error) error {
		return fmt.Errorf("reading tfjob x: %w", &url.Error{Op: "Get", URL: "https://" + host + "/apis/tfk8s.io/v1alpha1/tfjobs",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", cause)}})
	}
	for _, tc := range []struct {
		name string
		err  error
		want errorDetail
	}{
		{"a flag refused", invalidJob(errors.New("--workers -1: must not be negative"), ""),
			errorDetail{Type: ErrInvalidJob, Field: "--workers"}},
		{"a manifest's field refused", invalidJob(errors.New("field spec.tfReplicaSpecs.PS: replica type PS is given twice"), "-f"),
			errorDetail{Type: ErrInvalidJob, Field: "spec.tfReplicaSpecs.PS"}},
		{"DIR refused", invalidJob(errors.New("DIR ./x: not a directory"), "DIR"),
			errorDetail{Type: ErrInvalidJob, Field: "DIR"}},
		{"the command missing", invalidJob(errors.New("a command is required after --: ..."), ""),
			errorDetail{Type: ErrInvalidJob, Field: "command"}},
		{"refused by the API server's validation", apierrors.NewInvalid(schema.GroupKind{Group: "tfk8s.io", Kind: "TFJob"}, "x",
			field.ErrorList{field.Invalid(field.NewPath("spec", "runPolicy", "backoffLimit"), -1, "must be >= 0")}),
			errorDetail{Type: ErrInvalidJob, Field: "spec.runPolicy.backoffLimit"}},
		{"no job", &jobs.NotFoundError{Namespace: "default", Name: "x", Err: apierrors.NewNotFound(tfjobs, "x")},
			errorDetail{Type: ErrNotFound}},
		{"no stored files", fmt.Errorf("s3://b/runs/x: %w", storage.ErrNotFound), errorDetail{Type: ErrNotFound}},
		{"name taken", fmt.Errorf("creating tfjob x: %w", apierrors.NewAlreadyExists(tfjobs, "x")), errorDetail{Type: ErrExists}},
		{"no kubeconfig", &noClusterError{kubeconfig: "/root/.kube/config"}, errorDetail{Type: ErrClusterUnavailable}},
		{"API server refuses the connection", dial("10.0.0.1:6443", syscall.ECONNREFUSED), errorDetail{Type: ErrClusterUnavailable}},
		{"S3 refuses the connection", dial("10.0.0.2:9000", syscall.ECONNREFUSED), errorDetail{Type: ErrOther}},
		{"no S3 bucket", &storage.NotConfiguredError{Msg: "no S3 bucket configured"}, errorDetail{Type: ErrStorageNotConfigured}},
		{"API token refused", apierrors.NewUnauthorized("no"), errorDetail{Type: ErrAccessDenied}},
		{"RBAC refuses", apierrors.NewForbidden(tfjobs, "x", errors.New("no")), errorDetail{Type: ErrAccessDenied}},
		{"S3 refuses the key", fmt.Errorf("S3 endpoint refused access key k: %w",
			minio.ErrorResponse{Code: "InvalidAccessKeyId", StatusCode: 403}), errorDetail{Type: ErrAccessDenied}},
		{"S3 signature refused", minio.ErrorResponse{Code: "SignatureDoesNotMatch", StatusCode: 403}, errorDetail{Type: ErrAccessDenied}},
		{"a wait timed out", fmt.Errorf("waiting for tfjob x: %w", context.DeadlineExceeded), errorDetail{Type: ErrTimeout}},
		{"API server timed out", apierrors.NewTimeoutError("slow", 1), errorDetail{Type: ErrTimeout}},
		{"a run's job shown, not submitted", &notSubmittedError{fromRun: "rec/1", reason: "no tfjob default/rec is left"},
			errorDetail{Type: ErrNotSubmitted}},
		{"anything else", errors.New("disk full"), errorDetail{Type: ErrOther}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classifyError(tc.err, "10.0.0.1:6443")
			tc.want.Message = tc.err.Error()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("classifyError(%v) (-want +got):\n%s", tc.err, diff)
			}
		})
	}
}

// runJSONErrors runs tfk8s with TFK8S_ERRORS=json and returns its exit code and the
// error line it printed, decoded.
func runJSONErrors(t *testing.T, env map[string]string, args ...string) (int, errorDetail) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(k string) string {
			if k == EnvErrors {
				return "json"
			}
			return env[k]
		}, Name: "tfk8s"}
	code := Main(context.Background(), args, e)
	var line jsonError
	if err := json.Unmarshal(errOut.Bytes(), &line); err != nil {
		t.Fatalf("tfk8s %v: stderr %q is not one JSON error: %v", args, errOut.String(), err)
	}
	return code, line.Error
}

// TestJSONErrors: with TFK8S_ERRORS=json, a refused parameter, a refused flag value,
// a missing kubeconfig and missing S3 settings come out as one JSON line of their
// kind, the exit code non-zero.
func TestJSONErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		args      []string
		wantType  ErrorType
		wantField string
	}{
		{"negative workers", []string{"render", "--name", "x", "--image", "i", "--workers", "-1", "--", "true"}, ErrInvalidJob, "--workers"},
		{"unreadable flag value", []string{"render", "--name", "x", "--image", "i", "--backoff-limit", "many", "--", "true"}, ErrInvalidJob, "--backoff-limit"},
		{"no image", []string{"render", "--name", "x", "--", "true"}, ErrInvalidJob, "--image"},
		{"DIR missing", []string{"render", filepath.Join(dir, "nothing"), "--name", "x", "--image", "i", "--", "true"}, ErrInvalidJob, "DIR"},
		{"no S3 for DIR", []string{"render", dir, "--name", "x", "--image", "i", "--", "true"}, ErrStorageNotConfigured, ""},
		{"no cluster for list", []string{"--kubeconfig", empty, "list"}, ErrClusterUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := runJSONErrors(t, map[string]string{"KUBECONFIG": empty}, tc.args...)
			if code == 0 || got.Type != tc.wantType || got.Field != tc.wantField || got.Message == "" {
				t.Errorf("tfk8s %v: exit %d, error %+v; want %s naming %q", tc.args, code, got, tc.wantType, tc.wantField)
			}
		})
	}
}

// TestNoKubeconfig: without a kubeconfig, list says so instead of dialling
// localhost:8080, and version still succeeds, its server unknown for that reason.
func TestNoKubeconfig(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
	var out, errOut bytes.Buffer
	env := Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" }, Name: "tfk8s"}
	if code := Main(context.Background(), []string{"--kubeconfig", empty, "list"}, env); code == 0 ||
		!strings.Contains(errOut.String(), "no cluster: no kubeconfig at "+empty) || strings.Contains(errOut.String(), "8080") {
		t.Errorf("tfk8s list without a kubeconfig: exit %d, stderr %q; want the missing kubeconfig named", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Main(context.Background(), []string{"--kubeconfig", empty, "version"}, env); code != 0 ||
		!strings.Contains(out.String(), "Server: unknown: no cluster: no kubeconfig at "+empty) {
		t.Errorf("tfk8s version without a kubeconfig: exit %d, stdout %q, stderr %q; want the server unknown for want of a kubeconfig",
			code, out.String(), errOut.String())
	}
}
