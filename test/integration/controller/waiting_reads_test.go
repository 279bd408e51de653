package controller

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// countingTransport counts the GETs of the claims of one namespace that the
// controller sends the API server.
type countingTransport struct {
	next   http.RoundTripper
	prefix string
	gets   *atomic.Int32
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, c.prefix) {
		c.gets.Add(1)
	}
	return c.next.RoundTrip(req)
}

// TestWaitingJobReadsNoClaims: a PSFirst job whose workers wait for the parameter
// servers to run is reconciled at each change of its pods, and none of those
// reconciles reads its claims from the API server: they are read, around the cache,
// only when pods are about to be created.
func TestWaitingJobReadsNoClaims(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	var gets atomic.Int32
	cfg := *cp.Config
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, prefix: "/api/v1/namespaces/" + ns + "/persistentvolumeclaims/", gets: &gets}
	})
	startControllerWith(t, cfg, controller.Options{RetryBackoff: 200 * time.Millisecond})
	job := testutil.MakeTFJob("held", ns).PS(2).Workers(1).StartupPolicy(tfv1.StartupPolicyPSFirst).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi"))}}
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, "held-ps-0", "held-ps-1")
	claim(t, ns, "held-data")
	before := gets.Load()
	if before == 0 {
		t.Fatal("no GET of the job's claims counted while its parameter servers were created: the count misses them")
	}
	// ps-1 stays pending, so the worker waits; each restart of ps-0 is a reconcile,
	// seen once the status counts it.
	for n := int32(1); n <= 3; n++ {
		kubelet.SetRestarted(t, ns, "held-ps-0", n, 1)
		testutil.Eventually(t, "the status to count the restarts", func(ctx context.Context) (bool, error) {
			got, err := getJob(ctx, ns, job.Name)
			return err == nil && replicaStatus(got, tfv1.ReplicaTypePS).Restarts == n, err
		})
	}
	if pods, err := jobPods(context.Background(), ns, job.Name); err != nil || pods["held-worker-0"] != nil {
		t.Fatalf("worker created while a parameter server is pending (err %v)", err)
	}
	if got := gets.Load() - before; got != 0 {
		t.Errorf("%d GETs of the job's claims over 3 reconciles of a job whose workers wait, want 0", got)
	}
}
