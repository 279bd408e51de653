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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/storage"
)

var testStorage = storage.Config{Endpoint: "127.0.0.1:9000", AccessKeyID: "AKID", SecretAccessKey: "s3cr3t", Region: "us-east-1", Bucket: "bkt", Insecure: true}

func TestConstructStorageSecret(t *testing.T) {
	cases := []struct {
		name            string
		clusterEndpoint string
		wantEndpoint    string
		wantInsecure    string
	}{
		{name: "the CLI's endpoint", wantEndpoint: "127.0.0.1:9000", wantInsecure: "true"},
		{name: "a cluster endpoint as a URL", clusterEndpoint: "https://minio.minio.svc:9000/", wantEndpoint: "minio.minio.svc:9000", wantInsecure: "false"},
		{name: "a bare cluster endpoint keeps the scheme", clusterEndpoint: "minio.minio.svc:9000", wantEndpoint: "minio.minio.svc:9000", wantInsecure: "true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := constructStorageSecret("team", testStorage, tc.clusterEndpoint)
			want := &corev1.Secret{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{
					Name: storageSecretName(tc.wantEndpoint, "AKID"), Namespace: "team",
					Labels: map[string]string{"app.kubernetes.io/managed-by": "tfk8s"},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{
					"endpoint": []byte(tc.wantEndpoint), "accessKeyID": []byte("AKID"), "secretAccessKey": []byte("s3cr3t"),
					"region": []byte("us-east-1"), "insecure": []byte(tc.wantInsecure),
				},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("constructStorageSecret (-want +got):\n%s", diff)
			}
		})
	}
	a, b := storageSecretName("e:1", "k"), storageSecretName("e:1", "other")
	if a == b || a != storageSecretName("e:1", "k") || len(a) != len("tfk8s-s3-")+10 {
		t.Errorf("storageSecretName: %q and %q: want stable, distinct names of 19 characters", a, b)
	}
}

func TestEnsureSecret(t *testing.T) {
	want := constructStorageSecret("team", testStorage, "")
	rotated := want.DeepCopy()
	rotated.Data[controller.SecretKeySecretAccessKey] = []byte("old")
	foreign := want.DeepCopy()
	foreign.Labels = nil
	cases := []struct {
		name     string
		existing *corev1.Secret
		want     secretAction
		wantErr  string
	}{
		{name: "created", want: secretCreated},
		{name: "reused", existing: want.DeepCopy(), want: secretUnchanged},
		{name: "rotated key", existing: rotated, want: secretConfigured},
		{name: "not ours", existing: foreign, wantErr: "exists and was not made by tfk8s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(controller.Scheme())
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			c := b.Build()
			got, err := ensureSecret(context.Background(), c, want.DeepCopy())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ensureSecret error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ensureSecret = %s, want %s", got, tc.want)
			}
			stored := &corev1.Secret{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(want), stored); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Data, stored.Data); diff != "" {
				t.Errorf("stored data (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreateJobLeavesNothingHalfMade: a Secret created for a job that the API server
// then refuses is deleted again; one that existed before is kept.
func TestCreateJobLeavesNothingHalfMade(t *testing.T) {
	refuse := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*tfv1.TFJob); ok {
			return apierrors.NewForbidden(tfv1.GroupVersion.WithResource("tfjobs").GroupResource(), obj.GetName(), errors.New("quota exceeded"))
		}
		return c.Create(ctx, obj, opts...)
	}}
	secret := constructStorageSecret("team", testStorage, "")
	for _, existed := range []bool{false, true} {
		b := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithInterceptorFuncs(refuse)
		if existed {
			b = b.WithObjects(secret.DeepCopy())
		}
		c := b.Build()
		var out bytes.Buffer
		o := &rootOptions{env: Env{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &out}}}
		job, err := buildJob(nil, jobParams{Name: "mnist", Namespace: "team", Image: "tf", Command: []string{"python3"}, SecretName: secret.Name})
		if err != nil {
			t.Fatal(err)
		}
		err = o.createJob(context.Background(), &clients{client: c, namespace: "team"}, job, testStorage, &submitFlags{})
		if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
			t.Fatalf("createJob error = %v, want the API server's refusal", err)
		}
		getErr := c.Get(context.Background(), client.ObjectKeyFromObject(secret), &corev1.Secret{})
		if existed && getErr != nil {
			t.Errorf("the Secret that existed before is gone: %v", getErr)
		}
		if !existed && !apierrors.IsNotFound(getErr) {
			t.Errorf("the Secret created for the refused job is still there (get: %v)", getErr)
		}
	}
}
