package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
)

var testStorage = storage.Config{Endpoint: "127.0.0.1:9000", AccessKeyID: "AKID", SecretAccessKey: "s3cr3t", Region: "us-east-1", Bucket: "bkt", Insecure: true}

// TestCreateJobLeavesNothingHalfMade: the Secret created for a job that the API server
// then refuses is deleted again; another job's Secret is never touched.
func TestCreateJobLeavesNothingHalfMade(t *testing.T) {
	refuse := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*tfv1.TFJob); ok {
			return apierrors.NewForbidden(tfv1.GroupVersion.WithResource("tfjobs").GroupResource(), obj.GetName(), errors.New("quota exceeded"))
		}
		return c.Create(ctx, obj, opts...)
	}}
	other := jobs.ConstructStorageSecret("team", "other", testStorage, "")
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(refuse).WithObjects(other.DeepCopy()).Build()
	var out bytes.Buffer
	o := &rootOptions{env: Env{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}}
	job, err := jobspec.Build(nil, jobspec.Values{Name: "mnist", Namespace: "team", Image: "tf", Command: []string{"python3"}, SecretName: jobs.StorageSecretName("mnist")})
	if err != nil {
		t.Fatal(err)
	}
	err = o.createJob(context.Background(), &clients{Client: c, Namespace: "team"}, job, jobs.ConstructStorageSecret("team", "mnist", testStorage, ""), &out)
	if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("createJob error = %v, want the API server's refusal", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "team", Name: "mnist-storage"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Secret created for the refused job is still there (get: %v)", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(other), &corev1.Secret{}); err != nil {
		t.Errorf("the other job's Secret is gone: %v", err)
	}
}

// TestStorageSecret: submit makes the job a Secret of the local S3 settings only when
// its pods are to read that Secret, with the endpoint as the pods reach it.
func TestStorageSecret(t *testing.T) {
	build := func(secretName string) *tfv1.TFJob {
		job, err := jobspec.Build(nil, jobspec.Values{Name: "mnist", Namespace: "team", Image: "tf", Command: []string{"python3"}, SecretName: secretName})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	own := build(jobs.StorageSecretName("mnist"))
	cases := []struct {
		name                        string
		job                         *tfv1.TFJob
		cfg                         storage.Config
		userSecret, clusterEndpoint string
		want                        *corev1.Secret
	}{
		{name: "the job's own", job: own, cfg: testStorage, want: jobs.ConstructStorageSecret("team", "mnist", testStorage, "")},
		{name: "reached at another endpoint", job: own, cfg: testStorage, clusterEndpoint: "https://s3.cluster:9000",
			want: jobs.ConstructStorageSecret("team", "mnist", testStorage, "https://s3.cluster:9000")},
		{name: "nothing in S3", job: build(""), cfg: testStorage},
		{name: "no S3 settings", job: own},
		// The user's Secret named as the job's own would have been: still the user's.
		{name: "--storage-secret", job: own, cfg: testStorage, userSecret: jobs.StorageSecretName("mnist")},
		{name: "the manifest's own Secret", job: build("team-s3"), cfg: testStorage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, storageSecret(tc.job, tc.cfg, tc.userSecret, tc.clusterEndpoint)); diff != "" {
				t.Errorf("Secret (-want +got):\n%s", diff)
			}
		})
	}
}
