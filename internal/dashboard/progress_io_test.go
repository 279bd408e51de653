package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestProgressLocatesFilesOnce: the job page asks for its progress every
// progressRefresh; where the job's replicas store is found by listing S3 at the first
// reload only, and every later one still shows the stored figures.
func TestProgressLocatesFilesOnce(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := testutil.MakeTFJob("mnist", "team").Workers(2).Obj()
	job.UID = "5b7c0e1a-0000-4000-8000-000000000001"
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3"},
		Data: jobs.SecretData(counter.Endpoint, true, srv.Config())}
	b, err := json.Marshal(record("worker-0", 0.0625).Progress)
	if err != nil {
		t.Fatal(err)
	}
	u := jobs.ArtifactsBase(job).Join("worker-0/" + storage.ProgressName)
	if err := srv.Client(t).PutObject(ctx, u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(job, secret).Build()
	cluster := &kubeCluster{client: c, storage: jobs.Storage{Local: noLocalS3, CheckEndpoint: AnyS3Endpoint().Check}}
	s := newRecordingServer(t, cluster, Options{InCluster: false})

	var lists []int
	for range 3 {
		counter.Reset()
		w := serve(s, http.MethodGet, "/jobs/team/mnist/progress", "127.0.0.1")
		if body := html.UnescapeString(w.Body.String()); w.Code != http.StatusOK || !strings.Contains(body, "0.0625") {
			t.Fatalf("status %d, want 200 and the stored loss:\n%s", w.Code, body)
		}
		lists = append(lists, counter.Get("LIST"))
	}
	// The first reload lists one replica's prefix to locate the files; the later
	// ones list only what reading the records needs.
	if lists[1] != lists[0]-1 || lists[2] != lists[1] {
		t.Errorf("LISTs per reload %v, want the first one more than each later one", lists)
	}
	t.Logf("S3 LISTs per reload: %v", lists)
}
