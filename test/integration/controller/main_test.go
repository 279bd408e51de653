// Package controller tests the TFJob controller against a real control plane. There is
// no kubelet: as in Kubernetes' own controller integration tests, a test plays the
// kubelet by writing pod status, and models a controller crash by cancelling its
// context and starting a fresh one with new informers.
package controller

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
	kubelet   testutil.Kubelet
)

func TestMain(m *testing.M) {
	os.Exit(testutil.RunSuite(m, controlplane.Options{}, func(s *testutil.Suite) (func() error, error) {
		cp, k8sClient = s.ControlPlane, s.Client
		kubelet = testutil.Kubelet{Client: k8sClient}
		return nil, nil
	}))
}

// startController runs the controller until the returned function is called (a crash,
// as far as the API server can tell) or the test ends. Failed replicas come back after
// 200 ms rather than 10 s: TestRetryDelayDoubles checks the delay itself.
func startController(t *testing.T) (stop func()) {
	t.Helper()
	return startControllerWith(t, *cp.Config, controller.Options{RetryBackoff: 200 * time.Millisecond})
}

// startControllerWith runs a controller with the given client config and options.
func startControllerWith(t *testing.T, cfg rest.Config, opts controller.Options) (stop func()) {
	t.Helper()
	mgr, err := controller.NewManager(&cfg, controller.ManagerOptions{
		Options:                opts,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		SkipNameValidation:     true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: %v", err)
			}
		case <-time.After(20 * time.Second):
			// Reconciles end when their context does: one that does not is a defect,
			// and the stacks of tfk8s's goroutines say where it waits.
			t.Errorf("controller still stopping after 20s; goroutines in tfk8s code and controller workers, %s", tfk8sStacks())
			if err := <-done; err != nil {
				t.Errorf("controller: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitReplaced waits until the job's pod of that name is another than the one of
// UID old, and not being deleted.
func waitReplaced(t *testing.T, ns, job, pod string, old types.UID) {
	t.Helper()
	testutil.Eventually(t, pod+" to be re-created", func(ctx context.Context) (bool, error) {
		pods, err := jobPods(ctx, ns, job)
		p := pods[pod]
		return p != nil && p.UID != old && p.DeletionTimestamp == nil, err
	})
}

// getJob reads a job.
func getJob(ctx context.Context, ns, name string) (*tfv1.TFJob, error) {
	job := &tfv1.TFJob{}
	return job, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
}

// jobPods lists the pods of a job by name.
func jobPods(ctx context.Context, ns, job string) (map[string]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
		return nil, err
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// waitCondition waits until the job has condition typ set to True.
func waitCondition(t *testing.T, ns, name string, typ tfv1.JobState) *tfv1.TFJob {
	t.Helper()
	var job *tfv1.TFJob
	testutil.Eventually(t, fmt.Sprintf("TFJob %s to be %s", name, typ), func(ctx context.Context) (bool, error) {
		var err error
		job, err = getJob(ctx, ns, name)
		if err != nil {
			return false, err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == string(typ) && c.Status == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

// waitPods waits until the job has exactly the named pods, none being deleted.
func waitPods(t *testing.T, ns, job string, names ...string) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	testutil.Eventually(t, fmt.Sprintf("pods %v", names), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = jobPods(ctx, ns, job); err != nil {
			return false, err
		}
		if len(pods) != len(names) {
			return false, nil
		}
		for _, n := range names {
			if p := pods[n]; p == nil || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
	return pods
}

// replicaStatus is the status of one replica type, zero until the controller wrote one.
func replicaStatus(job *tfv1.TFJob, rt tfv1.ReplicaType) tfv1.ReplicaStatus {
	if rs := job.Status.ReplicaStatuses[rt]; rs != nil {
		return *rs
	}
	return tfv1.ReplicaStatus{}
}

// tfk8sStacks are the stacks of the goroutines running tfk8s's own code.
func tfk8sStacks() string {
	// Every goroutine of the whole suite: a buffer too small would cut the dump short
	// of the goroutines started last, a stuck reconcile's among them.
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	all := strings.Split(string(buf), "\n\n")
	for _, g := range all {
		if strings.Contains(g, "tfk8s/tfk8s/internal/") || strings.Contains(g, "controller-runtime/pkg/internal/controller") {
			out = append(out, g)
		}
	}
	return fmt.Sprintf("%d of %d goroutines:\n%s", len(out), len(all), strings.Join(out, "\n\n"))
}
