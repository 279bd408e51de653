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

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// runsCluster is a Cluster whose Runs and Run answer as told.
type runsCluster struct {
	unreachable
	runs []runs.Run
	page *RunPage
	err  error
}

func (c runsCluster) Runs(context.Context, runs.Query) ([]runs.Run, error) { return c.runs, c.err }
func (c runsCluster) Run(context.Context, string, string, string) (*RunPage, error) {
	return c.page, c.err
}

// storedRun is a run as runs.List makes its row, whose lead replica's loss ends at loss.
func storedRun(name, id string, loss tfevents.Value) runs.Run {
	p := record("chief-0", loss)
	return runs.Run{Namespace: "a", Name: name, Run: id, State: "Succeeded", Started: time.Now().Add(-time.Hour),
		Image: "tf:2.21", Replicas: "chief:1", Loss: &loss, Prefix: "s3://secret-bucket/runs/a/" + name + "/" + id + "/", Progress: p}
}

// TestRunsPages: the Runs page lists the runs with a box to tick each; the compare
// view draws a line per run and their final scalars side by side; names no run can
// have are 404, too many runs 400, and an S3 failure shows nothing of S3.
func TestRunsPages(t *testing.T) {
	two := []runs.Run{storedRun("mnist", "0f3a9c2e", 0.25), storedRun("resnet", "1b2c3d4e", 0.5)}
	s3Failure := errors.New(`listing s3://secret-bucket/runs/a/: Access Denied`)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, RunsSecret, errors.New("RBAC"))
	for _, tc := range []struct {
		name     string
		cluster  runsCluster
		target   string
		code     int
		want     []string
		notShown []string
		wantLog  string
	}{{
		name:    "list",
		cluster: runsCluster{runs: two},
		target:  "/runs?namespace=a",
		code:    http.StatusOK,
		want: []string{`<a href="/runs/a/mnist/0f3a9c2e">mnist</a>`, `value="resnet/1b2c3d4e"`, `<td class="loss">0.25</td>`,
			`action="/runs/a/compare"`, `id="nav-runs"`},
		notShown: []string{"secret-bucket"},
	}, {
		name:    "a since that is no duration",
		cluster: runsCluster{runs: two},
		target:  "/runs?namespace=a&since=yesterday",
		code:    http.StatusBadRequest,
		want:    []string{`since "yesterday": want a duration such as 24h or 90m`},
	}, {
		name:    "a selector that does not parse",
		cluster: runsCluster{runs: two},
		target:  "/runs?namespace=a&selector=team%3D%3Dvision%3D",
		code:    http.StatusBadRequest,
		want:    []string{`selector "team==vision=": found '='`},
	}, {
		name:    "compare",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?run=mnist/0f3a9c2e&run=resnet/1b2c3d4e",
		code:    http.StatusOK,
		want: []string{`<tr data-scalar="train/loss"><td>train/loss</td><td>0.25</td><td>0.5</td></tr>`,
			`<tr data-scalar="step"><td>step</td><td>20</td><td>20</td></tr>`,
			`data-curves="[{"scalar":"train/loss","lines":["mnist/0f3a9c2e","resnet/1b2c3d4e"],"steps":[10,20],"values":[[2,0.25],[2,0.5]]}]"`},
		notShown: []string{"secret-bucket"},
	}, {
		name:    "compare a run not stored",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?run=mnist/0f3a9c2e&run=other/1b2c3d4e",
		code:    http.StatusNotFound,
		want:    []string{"no run other/1b2c3d4e in namespace a"},
	}, {
		name:    "compare a job's name no job has",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?run=Mnist/0f3a9c2e",
		code:    http.StatusNotFound,
	}, {
		name:    "compare a run's id no run has",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?run=mnist/..",
		code:    http.StatusNotFound,
	}, {
		name:    "compare a job without its run",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?run=mnist",
		code:    http.StatusNotFound,
	}, {
		name:    "compare too many",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/compare?" + strings.Repeat("run=mnist/0f3a9c2e&", 9),
		code:    http.StatusBadRequest,
		want:    []string{"select from 1 to 8 runs"},
	}, {
		name:    "a run's id no run has",
		cluster: runsCluster{runs: two},
		target:  "/runs/a/mnist/0f3a9c2",
		code:    http.StatusNotFound,
	}, {
		name:    "a namespace no namespace has",
		cluster: runsCluster{runs: two},
		target:  "/runs/A_b/mnist/0f3a9c2e",
		code:    http.StatusNotFound,
	}, {
		name:    "the secret refused",
		cluster: runsCluster{err: forbidden},
		target:  "/runs?namespace=a",
		code:    http.StatusForbidden,
		want:    []string{`secrets "tfk8s-runs" is forbidden`},
	}, {
		name:    "no secret",
		cluster: runsCluster{err: apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, RunsSecret)},
		target:  "/runs?namespace=a",
		code:    http.StatusNotFound,
		want:    []string{`secrets "tfk8s-runs" not found; the runs' S3 settings are read from Secret tfk8s-runs`},
	}, {
		name:     "S3 failed",
		cluster:  runsCluster{err: s3Failure},
		target:   "/runs?namespace=a",
		code:     http.StatusBadGateway,
		want:     []string{"could not be read from S3"},
		notShown: []string{"secret-bucket", "s3://"},
		wantLog:  s3Failure.Error(),
	}, {
		name:     "some records unread",
		cluster:  runsCluster{runs: two, err: s3Failure},
		target:   "/runs?namespace=a",
		code:     http.StatusOK,
		want:     []string{`id="runs-partial"`, "mnist"},
		notShown: []string{"secret-bucket", "s3://"},
		wantLog:  s3Failure.Error(),
	}, {
		name:     "a run's page, S3 failed",
		cluster:  runsCluster{err: s3Failure},
		target:   "/runs/a/mnist/0f3a9c2e",
		code:     http.StatusBadGateway,
		notShown: []string{"secret-bucket", "s3://"},
		wantLog:  s3Failure.Error(),
	}, {
		name: "a run's page, with each replica's usage",
		cluster: runsCluster{page: &RunPage{Details: &runs.Details{Run: storedRun("mnist", "0f3a9c2e", 0.25), Manifests: []runs.Replica{
			{Name: "chief-0", Usage: &storage.Usage{Attempt: 1, CPUSeconds: 12.34, CPUCoresMean: 1.5, CPUCoresPeak: 1.98,
				MemoryMeanBytes: 200 << 20, MemoryPeakBytes: 300 << 20}},
			{Name: "worker-0", Usage: &storage.Usage{Attempt: 2, CPUSeconds: 3, CPUCoresMean: 0.25, CPUCoresPeak: 1,
				MemoryMeanBytes: 10 << 20, MemoryPeakBytes: 12 << 20, MemoryHighWaterBytes: 64 << 20, MemoryLimitBytes: 64 << 20, OOMKills: 1,
				GPUs: []storage.GPUUsage{{Samples: 3, UtilizationMeanPercent: 20, UtilizationPeakPercent: 25, MemoryPeakBytes: 1 << 30, MemoryTotalBytes: 16 << 30}}}},
		}}}},
		target: "/runs/a/mnist/0f3a9c2e",
		code:   http.StatusOK,
		want: []string{
			`<tr class="usage" data-replica="chief-0"><td>chief-0</td><td>1</td><td>1.50</td><td>1.98</td><td>12.3 s</td><td>200.0 MiB</td><td>300.0 MiB</td><td>none</td><td>0</td><td>-</td></tr>`,
			`<tr class="usage" data-replica="worker-0"><td>worker-0</td><td>2</td><td>0.25</td><td>1.00</td><td>3.0 s</td><td>10.0 MiB</td><td>12.0 MiB</td><td>64.0 MiB</td><td>1</td><td>20% (peak 25%) 1.0 GiB/16.0 GiB</td></tr>`,
			`<p class="status error oom">worker-0 OOMKilled: the kernel killed 1 process(es) at the memory limit 64.0 MiB; peak 64.0 MiB charged, working set peak 12.0 MiB</p>`,
		},
		notShown: []string{`id="advice"`},
	}, {
		name: "a run's page, with its right-sizing advice",
		cluster: runsCluster{page: &RunPage{Details: &runs.Details{Run: storedRun("mnist", "0f3a9c2e", 0.25), Advice: []runs.Advice{{
			ReplicaType: tfv1.ReplicaTypeWorker, Resource: corev1.ResourceMemory, Peak: 11 << 30 / 10,
			Requested: resource.MustParse("8Gi"), Suggested: resource.MustParse("1536Mi"),
		}}}}},
		target: "/runs/a/mnist/0f3a9c2e",
		code:   http.StatusOK,
		want: []string{
			`<li class="advice" data-replica-type="Worker" data-resource="memory">worker: memory peak 1.1 GiB of 8.0 GiB requested; memory request 1536Mi would fit</li>`,
			`tfk8s submit --from-run mnist/0f3a9c2e --right-size applies it.`,
		},
	}, {
		name:     "a run's page of a Kubeflow job with no runs stored",
		cluster:  runsCluster{err: &jobs.KubeflowExtrasError{Namespace: "a", Name: "kf", What: "runs"}},
		target:   "/runs/a/kf/0f3a9c2e",
		code:     http.StatusBadRequest,
		want:     []string{"tfjob.kubeflow.org/kf has no runs: code, data, artifacts, runs and TensorBoard are tfk8s.io TFJobs' alone"},
		notShown: []string{"could not be read from S3"},
	}, {
		name:     "a run not stored",
		cluster:  runsCluster{err: fmt.Errorf("no run of tfjob mnist in s3://secret-bucket/runs/a/mnist/: %w", storage.ErrNotFound)},
		target:   "/runs/a/mnist/0f3a9c2e",
		code:     http.StatusNotFound,
		want:     []string{"No such run in S3."},
		notShown: []string{"secret-bucket", "s3://"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			s := newRecordingServer(t, tc.cluster, Options{Log: &log})
			getPage(t, s, tc.target, tc.code, tc.want, tc.notShown)
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLog, log.String())
			}
		})
	}
}

// getPage gets target from s and checks its status, and that the page holds every
// string of want and none of notShown; it returns the page, unescaped.
func getPage(t *testing.T, s *Server, target string, code int, want, notShown []string) string {
	t.Helper()
	w := serve(s, http.MethodGet, target, "127.0.0.1")
	body := html.UnescapeString(w.Body.String())
	if w.Code != code {
		t.Errorf("status %d, want %d:\n%s", w.Code, code, body)
	}
	for _, want := range want {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	for _, not := range notShown {
		if strings.Contains(body, not) {
			t.Errorf("the page shows %q:\n%s", not, body)
		}
	}
	return body
}

func TestFinalScalars(t *testing.T) {
	a := &tfevents.Progress{Step: 200, Scalars: map[string]tfevents.Last{"loss": {Step: 200, Value: 0.125}, "accuracy": {Step: 200, Value: 0.9}}}
	b := &tfevents.Progress{Step: 90, Scalars: map[string]tfevents.Last{"loss": {Step: 90, Value: 0.5}}}
	want := []scalarRow{{"step", []string{"200", "90", "0"}}, {"accuracy", []string{"0.9", "-", "-"}}, {"loss", []string{"0.125", "0.5", "-"}}}
	if d := cmp.Diff(want, finalScalars([]*tfevents.Progress{a, b, {}})); d != "" {
		t.Errorf("final scalars (-want +got):\n%s", d)
	}
}

// TestRunsNeedTheirSecret: the runs are read from S3 with the namespace's runs Secret
// as the user reads it: a user who may read it sees the stored runs, with their
// attempts and curves; one who may not gets 403 and nothing stored; without the
// Secret, 404 saying which Secret. No page names the bucket or the secret key.
func TestRunsNeedTheirSecret(t *testing.T) {
	srv := s3server.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := jobs.SecretData(srv.Endpoint, true, srv.Config())
	data[tfjob.SecretKeyBucket] = []byte(srv.Bucket)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: RunsSecret}, Data: data}
	job := testutil.MakeTFJob("mnist", "team").Chief().Workers(1).Obj()
	job.UID = "0f3a9c2e-0000-4000-8000-000000000000"
	run := storage.RunPrefix(jobs.DefaultDestination(srv.Config()), "team", "mnist", "0f3a9c2e")
	put := func(u storage.URI, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Client(t).PutObject(ctx, u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put(run.Join(storage.RunRecordName), tfjob.RunRecord{Namespace: "team", Name: "mnist", UID: string(job.UID), Run: "0f3a9c2e", Submitted: time.Now(), Job: job})
	put(run.Join("chief-0/", storage.ProgressName), record("chief-0", 0.0625).Progress)
	exit := 137
	put(run.Join("worker-0/", storage.ManifestName), storage.Manifest{Replica: "worker-0", Attempts: []storage.Attempt{
		{Number: 1, Pod: "mnist-worker-0", Start: time.Now().Add(-time.Hour), ExitCode: &exit, Reason: "Signaled"}}})

	refuseSecrets := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("RBAC"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	for _, tc := range []struct {
		name    string
		funcs   interceptor.Funcs
		objects []client.Object
		target  string
		code    int
		want    []string
	}{
		{"list", interceptor.Funcs{}, []client.Object{secret}, "/runs?namespace=team", http.StatusOK, []string{"0f3a9c2e", "0.0625", "chief:1,worker:1"}},
		{"show", interceptor.Funcs{}, []client.Object{secret}, "/runs/team/mnist/0f3a9c2e", http.StatusOK,
			[]string{`<td>worker-0</td><td>1</td><td>mnist-worker-0</td>`, "<td>137</td><td>Signaled</td>", `"lines":["chief-0"]`, "0.0625"}},
		{"compare", interceptor.Funcs{}, []client.Object{secret}, "/runs/team/compare?run=mnist/0f3a9c2e", http.StatusOK, []string{"<td>0.0625</td>"}},
		{"another run", interceptor.Funcs{}, []client.Object{secret}, "/runs/team/mnist/0f3a9c2f", http.StatusNotFound, []string{"No such run in S3."}},
		{"list, the secret refused", refuseSecrets, []client.Object{secret}, "/runs?namespace=team", http.StatusForbidden, []string{`secrets "tfk8s-runs" is forbidden`}},
		{"show, the secret refused", refuseSecrets, []client.Object{secret}, "/runs/team/mnist/0f3a9c2e", http.StatusForbidden, []string{`secrets "tfk8s-runs" is forbidden`}},
		{"no secret", interceptor.Funcs{}, nil, "/runs?namespace=team", http.StatusNotFound, []string{`secrets "tfk8s-runs" not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := []client.Object{}
			for _, o := range tc.objects {
				objects = append(objects, o.DeepCopyObject().(client.Object))
			}
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objects...).WithInterceptorFuncs(tc.funcs).Build()
			cluster := &kubeCluster{client: c, storage: jobs.Storage{Local: noLocalS3, CheckEndpoint: AnyS3Endpoint().Check}}
			s := newRecordingServer(t, cluster, Options{})
			body := getPage(t, s, tc.target, tc.code, tc.want, nil)
			if tc.code != http.StatusOK && strings.Contains(body, "0.0625") {
				t.Errorf("a refused page shows a stored figure:\n%s", body)
			}
			if strings.Contains(body, srv.Bucket) || strings.Contains(body, srv.SecretKey) {
				t.Errorf("the page names the bucket or the secret key:\n%s", body)
			}
		})
	}
}
