package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestDecideTensorBoard checks what is written of a job's TensorBoard, from the objects
// observed and the job's status: created while wanted, deleted (only the job's own)
// once no longer asked for or expired, and nothing created on what could not be read.
func TestDecideTensorBoard(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	job := func(enabled bool) *tfv1.TFJob {
		j := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Workers(1).Artifacts("s3://runs/", "/logs").Obj()
		j.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: enabled, TTLSecondsAfterFinished: ptr.To[int32](600)}
		return j
	}
	meta := metav1.ObjectMeta{Name: "mnist-tensorboard", Namespace: "ml", OwnerReferences: []metav1.OwnerReference{fixtures.OwnerRef}}
	ready := &appsv1.Deployment{ObjectMeta: meta, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}
	svc := &corev1.Service{ObjectMeta: meta}
	strange := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mnist-tensorboard", Namespace: "ml"}}
	running := &tfv1.TFJobStatus{}
	finished := &tfv1.TFJobStatus{CompletionTime: &metav1.Time{Time: now.Add(-time.Minute)},
		Conditions: []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue}}}
	expired := &tfv1.TFJobStatus{CompletionTime: &metav1.Time{Time: now.Add(-time.Hour)}, Conditions: finished.Conditions}
	url := "http://mnist-tensorboard.ml.svc:6006/"
	type view struct {
		Create, Remove []string
		Status         *tfv1.TensorBoardStatus
		Requeue        time.Duration
		Err            bool
	}
	kinds := func(objs []client.Object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%T", o))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		job  *tfv1.TFJob
		st   *tfv1.TFJobStatus
		v    tensorBoardView
		want view
	}{
		{name: "not asked for", job: job(false), st: running, want: view{}},
		{name: "no longer asked for: the job's own go", job: job(false), st: running,
			v: tensorBoardView{deploy: ready, service: strange}, want: view{Remove: []string{"*v1.Deployment"}}},
		{name: "asked for: both created", job: job(true), st: running,
			want: view{Create: []string{"*v1.Deployment", "*v1.Service"}, Status: &tfv1.TensorBoardStatus{ServiceName: "mnist-tensorboard", URL: url}}},
		{name: "running and ready", job: job(true), st: running, v: tensorBoardView{deploy: ready, service: svc},
			want: view{Status: &tfv1.TensorBoardStatus{ServiceName: "mnist-tensorboard", URL: url, Ready: true}}},
		{name: "finished: it expires", job: job(true), st: finished, v: tensorBoardView{deploy: ready, service: svc},
			want: view{Requeue: 9 * time.Minute, Status: &tfv1.TensorBoardStatus{ServiceName: "mnist-tensorboard", URL: url, Ready: true,
				ExpiresAt: &metav1.Time{Time: now.Add(9 * time.Minute)}}}},
		{name: "expired", job: job(true), st: expired, v: tensorBoardView{deploy: ready, service: svc},
			want: view{Remove: []string{"*v1.Deployment", "*v1.Service"}}},
		{name: "not read: nothing created", job: job(true), st: running, v: tensorBoardView{err: errors.New("cache stopped")},
			want: view{Err: true, Status: &tfv1.TensorBoardStatus{ServiceName: "mnist-tensorboard", URL: url}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decideTensorBoard(tc.job, tc.st, tc.v, PodOptions{}, now)
			got := view{Create: kinds(p.create), Remove: kinds(p.remove), Status: p.status, Requeue: p.requeue, Err: p.err != nil}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
