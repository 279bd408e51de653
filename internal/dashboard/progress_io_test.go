package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
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

// progressJob stores worker-0's progress record of a two-worker job in srv, and
// returns a server whose job page reads S3 through counter and logs to log, and a
// function storing a file under the job's replicas' prefix.
func progressJob(t *testing.T, srv *s3server.Server, counter *s3server.Counter, log io.Writer) (*Server, func(string, []byte)) {
	t.Helper()
	job := testutil.MakeTFJob("mnist", "team").Workers(2).Obj()
	job.UID = "5b7c0e1a-0000-4000-8000-000000000001"
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3"},
		Data: jobs.SecretData(counter.Endpoint, true, srv.Config())}
	put := func(key string, b []byte) {
		t.Helper()
		u := jobs.ArtifactsBase(job).Join(key)
		if err := srv.Client(t).PutObject(context.Background(), u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(record("worker-0", 0.0625).Progress)
	if err != nil {
		t.Fatal(err)
	}
	put("worker-0/"+storage.ProgressName, b)
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(job, secret).Build()
	cluster := &kubeCluster{client: c, storage: jobs.Storage{Local: noLocalS3, CheckEndpoint: AnyS3Endpoint().Check}}
	return newRecordingServer(t, cluster, Options{InCluster: false, Log: log}), put
}

// reloadProgress asks for the job's progress section three times, as the page does
// every progressRefresh, and returns how many requests of kind each cost, and the
// last section.
func reloadProgress(t *testing.T, s *Server, counter *s3server.Counter, kind string) ([]int, string) {
	t.Helper()
	var counts []int
	var body string
	for range 3 {
		counter.Reset()
		w := serve(s, http.MethodGet, "/jobs/team/mnist/progress", "127.0.0.1")
		if body = html.UnescapeString(w.Body.String()); w.Code != http.StatusOK || !strings.Contains(body, "0.0625") {
			t.Fatalf("status %d, want 200 and the stored loss:\n%s", w.Code, body)
		}
		counts = append(counts, counter.Get(kind))
	}
	return counts, body
}

// TestProgressLocatesFilesOnce: the job page asks for its progress every
// progressRefresh; where the job's replicas store is found by listing S3 at the first
// reload only, and every later one still shows the stored figures.
func TestProgressLocatesFilesOnce(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	s, _ := progressJob(t, srv, counter, io.Discard)
	lists, _ := reloadProgress(t, s, counter, "LIST")
	// The first reload lists one replica's prefix to locate the files; the later
	// ones list only what reading the records needs.
	if lists[1] != lists[0]-1 || lists[2] != lists[1] {
		t.Errorf("LISTs per reload %v, want the first one more than each later one", lists)
	}
	t.Logf("S3 LISTs per reload: %v", lists)
}

// TestProgressReadsUsageOnce: the replicas' usage records change once per upload
// interval, so the reloads within usageCacheFor of the first GET none of them (one
// per replica, stored or not), and still draw the usage curves.
func TestProgressReadsUsageOnce(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	s, put := progressJob(t, srv, counter, io.Discard)
	put("worker-0/"+storage.UsageName, usageJSON(t))
	gets, body := reloadProgress(t, s, counter, "GET")
	if gets[1] != gets[0]-2 || gets[2] != gets[1] {
		t.Errorf("GETs per reload %v, want the first one two more (the workers' usage.json) than each later one", gets)
	}
	if !strings.Contains(body, `id="usage-curves"`) || strings.Contains(body, "usage-error") {
		t.Errorf("the last reload does not draw the usage curves:\n%s", body)
	}
	t.Logf("S3 GETs per reload: %v", gets)
}

// TestProgressShowsCurvesPastAnUnreadableUsage: a usage record that does not read
// leaves the training curves and the other replicas' usage shown, with a note.
func TestProgressShowsCurvesPastAnUnreadableUsage(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	var log bytes.Buffer
	s, put := progressJob(t, srv, counter, &log)
	put("worker-0/"+storage.UsageName, usageJSON(t))
	put("worker-1/"+storage.UsageName, []byte("{not json"))
	_, body := reloadProgress(t, s, counter, "GET")
	for _, want := range []string{`id="curves"`, `id="usage-curves"`, `id="usage-error"`} {
		if !strings.Contains(body, want) {
			t.Errorf("%s not in the section:\n%s", want, body)
		}
	}
	// The section names nothing of S3; the log says which record failed.
	if strings.Contains(body, srv.Bucket) || !strings.Contains(log.String(), "worker-1/"+storage.UsageName) {
		t.Errorf("the bucket is in the section, or the failed record not in the log:\n%s\n---\n%s", body, log.String())
	}
}

// usageJSON is a usage record of two samples.
func usageJSON(t *testing.T) []byte {
	t.Helper()
	at := time.Now().Add(-time.Minute)
	b, err := json.Marshal(storage.Usage{Start: at, Updated: at.Add(30 * time.Second), Series: []storage.UsagePoint{
		{Time: at, CPUCores: 0.5, MemoryBytes: 1 << 28}, {Time: at.Add(30 * time.Second), CPUCores: 1, MemoryBytes: 1 << 29}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
