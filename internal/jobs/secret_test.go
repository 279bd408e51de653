package jobs

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
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
			got := ConstructStorageSecret("team", "mnist", testStorage, tc.clusterEndpoint)
			want := &corev1.Secret{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{
					Name: "mnist-storage", Namespace: "team",
					Labels: map[string]string{"app.kubernetes.io/managed-by": "tfk8s", "tfk8s.io/job-name": "mnist"},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{
					"endpoint": []byte(tc.wantEndpoint), "accessKeyID": []byte("AKID"), "secretAccessKey": []byte("s3cr3t"),
					"region": []byte("us-east-1"), "insecure": []byte(tc.wantInsecure),
				},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ConstructStorageSecret (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreateStorageSecret: a Secret of the job's name left by a job that is gone, or
// by a submit that never created its job, is replaced; one in use, or not tfk8s's, is
// an error and stays as it was.
func TestCreateStorageSecret(t *testing.T) {
	want := ConstructStorageSecret("team", "mnist", testStorage, "")
	withOwner := func(uid types.UID) *corev1.Secret {
		s := want.DeepCopy()
		s.Data = map[string][]byte{"endpoint": []byte("old")}
		if uid != "" {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob", Name: "mnist", UID: uid}}
		}
		return s
	}
	foreign := withOwner("")
	foreign.Labels = nil
	live := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "mnist", UID: "live"}}
	cases := []struct {
		name     string
		existing []client.Object
		wantErr  string
	}{
		{name: "none there"},
		{name: "left by a deleted job", existing: []client.Object{withOwner("deleted")}},
		{name: "left by an interrupted submit", existing: []client.Object{withOwner("")}},
		{name: "owned by the live job", existing: []client.Object{withOwner("live"), live}, wantErr: "belongs to the existing tfjob mnist"},
		{name: "unowned while its job exists", existing: []client.Object{withOwner(""), live}, wantErr: "belongs to the existing tfjob mnist"},
		{name: "not made by tfk8s", existing: []client.Object{foreign}, wantErr: "exists and was not made by tfk8s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.existing...).Build()
			_, err := CreateStorageSecret(context.Background(), c, want.DeepCopy())
			stored := &corev1.Secret{}
			if gerr := c.Get(context.Background(), client.ObjectKeyFromObject(want), stored); gerr != nil && !apierrors.IsNotFound(gerr) {
				t.Fatal(gerr)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("CreateStorageSecret error = %v, want %q", err, tc.wantErr)
				}
				if string(stored.Data["endpoint"]) != "old" {
					t.Errorf("the refused Secret was changed: %v", stored.Data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Data, stored.Data); diff != "" {
				t.Errorf("stored data (-want +got):\n%s", diff)
			}
			if len(stored.OwnerReferences) != 0 {
				t.Errorf("the new Secret kept a stale owner: %v", stored.OwnerReferences)
			}
		})
	}
}

// TestOwnSecretAfterARace: a refused submit of the same name deletes the Secret it
// made, the one the created job names, just as the job is made its owner: the Secret
// is created again, owned by the job.
func TestOwnSecretAfterARace(t *testing.T) {
	secret := ConstructStorageSecret("team", "twin", testStorage, "")
	job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "twin", UID: "job-uid"}}
	raced := false
	deleteFirst := interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if !raced {
			raced = true
			if err := c.Delete(ctx, obj); err != nil {
				return err
			}
		}
		return c.Update(ctx, obj, opts...)
	}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(deleteFirst).WithObjects(secret.DeepCopy()).Build()
	if err := OwnSecret(context.Background(), c, secret, job); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(secret), got); err != nil {
		t.Fatal(err)
	}
	if !raced || !ownedBy(got, job.UID) || string(got.Data["endpoint"]) != testStorage.Endpoint {
		t.Errorf("after the race: raced %v, owners %v, data %v", raced, got.OwnerReferences, got.Data)
	}
}
