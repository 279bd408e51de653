package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// progressCluster is a Cluster whose Progress answers as told.
type progressCluster struct {
	unreachable
	progress *Progress
	err      error
}

func (c progressCluster) Progress(context.Context, string, string) (*Progress, error) {
	return c.progress, c.err
}

// record is a progress record of replica whose loss ends at loss, at step 20.
func record(replica string, loss tfevents.Value) *jobs.JobProgress {
	return &jobs.JobProgress{Replica: replica, Progress: &tfevents.Progress{
		Step: 20, Updated: time.Now().Add(-90 * time.Second),
		Scalars: map[string]tfevents.Last{"train/loss": {Step: 20, Value: loss}},
		Series:  map[string][]tfevents.Point{"train/loss": {{Step: 10, Value: 2}, {Step: 20, Value: loss}}},
	}}
}

// TestProgressSection: the section shows the lead replica's step and loss, how fresh
// they are and every replica's curves, and asks again while the job runs; an error
// shows its kind and nothing of S3 (the bucket and keys go to the log only), and only
// a failure to read S3 is asked again.
func TestProgressSection(t *testing.T) {
	s3Failure := errors.New(`reading s3://secret-bucket/runs/a/mnist/chief-0/progress.json: Access Denied`)
	lag := "the agents upload the summaries every 1m0s: the figures lag training by up to that, plus the trainer's flush"
	for _, tc := range []struct {
		name     string
		cluster  progressCluster
		code     int
		want     []string
		refresh  bool
		wantLog  string
		notShown []string
	}{{
		name:    "running",
		cluster: progressCluster{progress: &Progress{Stored: true, Lag: lag, Replicas: []*jobs.JobProgress{record("chief-0", 0.3125), record("worker-0", 0.25)}}},
		code:    http.StatusOK,
		want: []string{`<dd id="progress-step">20</dd>`, `>0.3125</dd>`, "Loss is train/loss at step 20", "90s ago, from chief-0", lag, "every 10 s",
			`data-curves="[{"scalar":"train/loss","lines":["chief-0","worker-0"],"steps":[10,20],"values":[[2,0.3125],[2,0.25]]}]"`},
		refresh: true,
	}, {
		name:     "finished",
		cluster:  progressCluster{progress: &Progress{Stored: true, Finished: true, Lag: lag, Replicas: []*jobs.JobProgress{record("worker-0", 0.5)}}},
		code:     http.StatusOK,
		want:     []string{`>0.5</dd>`, "from worker-0"},
		notShown: []string{"every 10 s"},
	}, {
		name: "usage beside the training curves",
		cluster: progressCluster{progress: &Progress{Stored: true, Lag: lag, Replicas: []*jobs.JobProgress{record("chief-0", 0.3125)},
			Usage: []replicaUsage{usedOver("chief-0", 0, 1.5, 100), usedOver("worker-0", 2, 2, 300)}}},
		code: http.StatusOK,
		want: []string{`data-curves="[{"scalar":"train/loss"`, `id="usage-curves"`,
			`data-curves="[{"scalar":"usage/cpu (cores)","lines":["chief-0","worker-0"],"steps":[0,2,4],"values":[[0,1.5,null],[null,0,2]],"x":"seconds"},` +
				`{"scalar":"usage/memory (MiB)","lines":["chief-0","worker-0"],"steps":[0,2,4],"values":[[100,100,null],[null,300,300]],"x":"seconds"}]"`},
		refresh: true,
	}, {
		name:    "usage without summaries",
		cluster: progressCluster{progress: &Progress{Stored: true, Lag: lag, Usage: []replicaUsage{usedOver("worker-0", 0, 2, 300)}}},
		code:    http.StatusOK,
		want:    []string{"None stored yet", `id="usage-curves"`, `"scalar":"usage/memory (MiB)","lines":["worker-0"],"steps":[0,2],"values":[[300,300]]`},
		refresh: true,
	}, {
		name:    "none yet",
		cluster: progressCluster{progress: &Progress{Stored: true, Lag: lag}},
		code:    http.StatusOK,
		want:    []string{"None stored yet"},
		refresh: true,
	}, {
		name:    "no artifacts",
		cluster: progressCluster{progress: &Progress{}},
		code:    http.StatusOK,
		want:    []string{"stores nothing in S3"},
	}, {
		name:    "the secret refused",
		cluster: progressCluster{err: fmt.Errorf("reading storage secret a/s3: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s3", errors.New("RBAC")))},
		code:    http.StatusForbidden,
		want:    []string{`secrets "s3" is forbidden`},
	}, {
		name:    "the job gone",
		cluster: progressCluster{err: apierrors.NewNotFound(schema.GroupResource{Group: "tfk8s.io", Resource: "tfjobs"}, "mnist")},
		code:    http.StatusNotFound,
		want:    []string{`tfjobs.tfk8s.io "mnist" not found`},
	}, {
		name:     "S3 failed",
		cluster:  progressCluster{err: s3Failure},
		code:     http.StatusBadGateway,
		want:     []string{"could not be read from S3"},
		refresh:  true,
		wantLog:  s3Failure.Error(),
		notShown: []string{"secret-bucket", "s3://"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			s := newRecordingServer(t, tc.cluster, Options{Log: &log})
			body := getPage(t, s, "/jobs/a/mnist/progress", tc.code, tc.want, tc.notShown)
			if refresh := strings.Contains(body, `hx-trigger="every 10s"`); refresh != tc.refresh {
				t.Errorf("refreshes: %v, want %v:\n%s", refresh, tc.refresh, body)
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLog, log.String())
			}
		})
	}
}

// TestProgressNeedsTheJobAndItsSecret: the records are read from S3 with the job's
// storage Secret as the user reads it: a user who may not read the Secret, or the
// job, gets 403 and none of the stored figures; one who may gets them.
func TestProgressNeedsTheJobAndItsSecret(t *testing.T) {
	srv := s3server.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := testutil.MakeTFJob("mnist", "team").Workers(1).Obj()
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3"},
		Data: jobs.SecretData(srv.Endpoint, true, srv.Config())}
	stored := record("worker-0", 0.0625)
	b, err := json.Marshal(stored.Progress)
	if err != nil {
		t.Fatal(err)
	}
	u := storage.ReplicaPrefix(storage.URI{Bucket: srv.Bucket, Key: "runs/"}, "team", "mnist", "worker-0").Join(storage.ProgressName)
	if err := srv.Client(t).PutObject(ctx, u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}

	refuse := func(kind client.Object) interceptor.Funcs {
		return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if fmt.Sprintf("%T", obj) == fmt.Sprintf("%T", kind) {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets or tfjobs"}, key.Name, errors.New("RBAC"))
			}
			return c.Get(ctx, key, obj, opts...)
		}}
	}
	for _, tc := range []struct {
		name   string
		funcs  interceptor.Funcs
		target string
		code   int
	}{
		{"may read both", interceptor.Funcs{}, "/jobs/team/mnist/progress", http.StatusOK},
		{"may not read the secret", refuse(&corev1.Secret{}), "/jobs/team/mnist/progress", http.StatusForbidden},
		{"may not read the job", refuse(&tfv1.TFJob{}), "/jobs/team/mnist/progress", http.StatusForbidden},
		{"no such job", interceptor.Funcs{}, "/jobs/team/other/progress", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(job.DeepCopy(), secret.DeepCopy()).WithInterceptorFuncs(tc.funcs).Build()
			cluster := &kubeCluster{client: c, storage: jobs.Storage{Local: noLocalS3, CheckEndpoint: AnyS3Endpoint().Check}}
			s := newRecordingServer(t, cluster, Options{InCluster: false})
			w := serve(s, http.MethodGet, tc.target, "127.0.0.1")
			body := html.UnescapeString(w.Body.String())
			shown := strings.Contains(body, "0.0625")
			if w.Code != tc.code || shown != (tc.code == http.StatusOK) {
				t.Errorf("status %d, figures shown %v; want %d, %v:\n%s", w.Code, shown, tc.code, tc.code == http.StatusOK, body)
			}
			if strings.Contains(body, srv.Bucket) || strings.Contains(body, srv.SecretKey) {
				t.Errorf("the section names the bucket or the secret key:\n%s", body)
			}
		})
	}
}

// usedOver is a usage record of two samples 2 s apart, from second at on: the cores of
// the second (the first has none before it) and a working set of mib MiB.
func usedOver(replica string, at int, cores float64, mib int64) replicaUsage {
	t0 := time.Date(2026, 11, 29, 10, 0, at, 0, time.UTC)
	return replicaUsage{Replica: replica, Usage: &storage.Usage{Series: []storage.UsagePoint{
		{Time: t0, MemoryBytes: mib << 20}, {Time: t0.Add(2 * time.Second), CPUCores: cores, MemoryBytes: mib << 20}}}}
}
