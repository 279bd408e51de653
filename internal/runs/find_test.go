package runs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// lookedUp is what a user sees of a lookup: the run found, the live job beside it,
// whether the cluster could not say, and the error.
type lookedUp struct {
	Run, Prefix string
	Live        bool
	LiveJob     string
	LiveErr     string
	Err         string
}

// TestLookup: S3 holds run 0000000b of mnist, whose live job is a later run
// (0000000a) that stored nothing yet, and nothing of job fresh or of the Kubeflow job
// kf. Each way of naming a run, with the cluster or without, finds what it says.
func TestLookup(t *testing.T) {
	srv := s3server.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	earlier := testutil.MakeTFJob("mnist", "team").Workers(1).Artifacts(dest.String(), "/logs").UID("0000000b-0000-0000-0000-000000000000").Obj()
	record, err := storage.Marshal(jobs.NewRunRecord(earlier, time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	at := storage.RunPrefix(dest, "team", "mnist", "0000000b").Join(storage.RunRecordName)
	if err := srv.Client(t).PutObject(ctx, at, strings.NewReader(string(record)), int64(len(record)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	live := testutil.MakeTFJob("mnist", "team").Workers(1).Artifacts(dest.String(), "/logs").UID("0000000a-0000-0000-0000-000000000000").Obj()
	fresh := testutil.MakeTFJob("fresh", "team").Workers(1).Artifacts(dest.String(), "/logs").UID("0000000c-0000-0000-0000-000000000000").Obj()
	kf := &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "kf"}}
	served := meta.NewDefaultRESTMapper([]schema.GroupVersion{tfv1.GroupVersion})
	served.Add(tfv1.GroupVersion.WithKind("TFJob"), meta.RESTScopeNamespace)
	served.Add(kubeflowv1.GroupVersion.WithKind("TFJob"), meta.RESTScopeNamespace)
	cluster := fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(served).WithObjects(live, fresh, kf).Build()
	refused := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(live).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewForbidden(tfv1.GroupVersion.WithResource("tfjobs").GroupResource(), key.Name, errors.New("RBAC"))
		}}).Build()
	noCluster := errors.New("no cluster: no kubeconfig at /nowhere")
	c := srv.Client(t)
	for _, tc := range []struct {
		name      string
		cluster   client.Client
		noCluster error
		run       Name
		want      lookedUp
	}{{
		name: "a Kubeflow job with nothing stored", cluster: cluster, run: Name{Job: "kf"},
		want: lookedUp{Err: "tfjob.kubeflow.org/kf has no runs: code, data, artifacts, runs and TensorBoard are tfk8s.io TFJobs' alone; " +
			"move the job to tfk8s.io with tfk8s render --to tfk8s (docs/kubeflow.md)"},
	}, {
		name: "a run named, not the live job's", cluster: cluster, run: Name{Job: "mnist", Run: "0000000b"},
		want: lookedUp{Run: "0000000b", Prefix: storage.RunPrefix(dest, "team", "mnist", "0000000b").String(), LiveJob: "mnist"},
	}, {
		name: "the live job, nothing stored yet", cluster: cluster, run: Name{Job: "fresh"},
		want: lookedUp{Run: "0000000c", Prefix: jobs.ArtifactsBase(fresh).String(), Live: true, LiveJob: "fresh"},
	}, {
		name: "no cluster: the run as S3 has it", noCluster: noCluster, run: Name{Job: "mnist"},
		want: lookedUp{Run: "0000000b", Prefix: storage.RunPrefix(dest, "team", "mnist", "0000000b").String(),
			LiveErr: "reading tfjob mnist: no cluster: no kubeconfig at /nowhere"},
	}, {
		name: "no cluster, nothing stored", noCluster: noCluster, run: Name{Job: "fresh"},
		want: lookedUp{LiveErr: "reading tfjob fresh: no cluster: no kubeconfig at /nowhere",
			Err: "no run of tfjob fresh in " + storage.JobPrefix(dest, "team", "fresh").String() + ": not found"},
	}, {
		name: "the job refused: the run as S3 has it", cluster: refused, run: Name{Job: "mnist"},
		want: lookedUp{Run: "0000000b", Prefix: storage.RunPrefix(dest, "team", "mnist", "0000000b").String(),
			LiveErr: `reading tfjob mnist: tfjobs.tfk8s.io "mnist" is forbidden: RBAC`},
	}, {
		name: "the job refused, nothing stored", cluster: refused, run: Name{Job: "fresh"},
		want: lookedUp{LiveErr: `reading tfjob fresh: tfjobs.tfk8s.io "fresh" is forbidden: RBAC`,
			Err: "no run of tfjob fresh in " + storage.JobPrefix(dest, "team", "fresh").String() + ": not found"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := Source{Cluster: tc.cluster, NoCluster: tc.noCluster, Storage: c, Destination: dest, Namespace: "team"}
			found, err := Lookup(ctx, src, tc.run)
			got := lookedUp{Run: found.Run.Run, Prefix: found.Prefix, Live: found.Live}
			if found.LiveJob != nil {
				got.LiveJob = found.LiveJob.Name
			}
			if found.LiveErr != nil {
				got.LiveErr = found.LiveErr.Error()
			}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup(%+v) (-want +got):\n%s", tc.run, diff)
			}
		})
	}
}
