package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/localnode"
)

// The scheduling cluster's nodes also run the DRA driver (local up --dra-gpus), two
// simulated GPUs each, of DeviceClass localnode.DRADriver: the real kube-scheduler
// allocates the claims tfk8s makes and the real kubelet has the driver prepare them.
const schedDRAGPUs = 2

// submitDRA submits a job of workers replicas, each claiming one simulated GPU of the
// nodes' DRA driver, running the script with args; gang asks for the native gang
// scheduler.
func (c *schedCluster) submitDRA(ctx context.Context, t *testing.T, name string, workers int, gang bool, args ...string) {
	t.Helper()
	policy := ""
	if gang {
		policy = "{provider: native}"
	}
	c.submitWithFlags(ctx, t, name, policy, []string{"--workers", strconv.Itoa(workers), "--gpus", "1", "--device-class", localnode.DRADriver}, args...)
}

// testDRADistinctDevices: 4 workers claiming a simulated GPU each, on 2 nodes of 2,
// run with 4 distinct devices, each in the environment the driver's CDI spec sets;
// a fifth worker's claim then stays unallocated and its pod unscheduled; a native
// gang of 2 binds none of its pods while the 4 hold every device, and all once they
// are gone.
func testDRADistinctDevices(ctx context.Context, t *testing.T, c *schedCluster) {
	start := time.Now()
	c.submitDRA(ctx, t, "dra", 4, false, "hold")
	if err := c.waitAllRunning(ctx, "dra", 4, 50*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	t.Logf("submit → 4 DRA workers Running: %.2f s", time.Since(start).Seconds())
	ps, err := c.pods(ctx, "dra")
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]string{}
	for _, p := range ps {
		claim := c.podDeviceClaim(ctx, t, p)
		results := claim.Status.Allocation.Devices.Results
		if len(results) != 1 || results[0].Driver != localnode.DRADriver {
			t.Fatalf("claim %s of %s: allocation %+v, want one device of driver %s", claim.Name, p.Name, results, localnode.DRADriver)
		}
		device := results[0].Pool + "/" + results[0].Device
		if other, ok := devices[device]; ok {
			t.Errorf("device %s allocated to both %s and %s", device, other, p.Name)
		}
		devices[device] = p.Name
		if results[0].Pool != p.Spec.NodeName {
			t.Errorf("%s on node %s got device %s of another node's pool", p.Name, p.Spec.NodeName, device)
		}
		c.waitClaimEnv(ctx, t, p, claim.Name)
	}
	t.Logf("devices allocated: %v", devices)
	if len(devices) != 4 {
		t.Fatalf("%d distinct devices allocated to 4 workers, want 4: %v", len(devices), devices)
	}
	testDRAFifthUnallocated(ctx, t, c)
	testDRAGang(ctx, t, c)
}

// testDRAFifthUnallocated: with the 4 devices held, a fifth claim is not allocated
// and the scheduler says why.
func testDRAFifthUnallocated(ctx context.Context, t *testing.T, c *schedCluster) {
	c.submitDRA(ctx, t, "dra-fifth", 1, false, "done")
	var reason string
	c.eventually(ctx, t, "the fifth worker reported unschedulable", func() (bool, error) {
		ps, err := c.pods(ctx, "dra-fifth")
		if err != nil || len(ps) != 1 {
			return false, err
		}
		if ps[0].Spec.NodeName != "" {
			c.fail(t, "the fifth worker bound to %s with every device held", ps[0].Spec.NodeName)
		}
		for _, cond := range ps[0].Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				reason = cond.Reason + ": " + cond.Message
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("fifth worker: %s", reason)
	claims, err := c.cs.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{LabelSelector: tfv1.LabelJobName + "=dra-fifth"})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 || claims.Items[0].Status.Allocation != nil {
		t.Fatalf("the fifth worker's claims %+v, want one, unallocated", claims.Items)
	}
	c.mustTfk8s(ctx, t, "delete", "dra-fifth")
}

// testDRAGang: a native gang of 2 DRA workers binds none while the 4 workers of dra
// hold every device, and both once they are deleted.
func testDRAGang(ctx context.Context, t *testing.T, c *schedCluster) {
	c.submitDRA(ctx, t, "dra-gang", 2, true, "done")
	c.checkGangWaitsFor(ctx, t, "dra-gang", 2, "dra")
}

// podDeviceClaim is the allocated ResourceClaim of the pod's tfk8s device claim.
func (c *schedCluster) podDeviceClaim(ctx context.Context, t *testing.T, p corev1.Pod) *resourcev1.ResourceClaim {
	t.Helper()
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name != build.DeviceClaimName || s.ResourceClaimName == nil {
			continue
		}
		claim, err := c.cs.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if claim.Status.Allocation == nil {
			t.Fatalf("claim %s of running pod %s is not allocated", claim.Name, p.Name)
		}
		return claim
	}
	t.Fatalf("pod %s has no claim %s: %+v", p.Name, build.DeviceClaimName, p.Status.ResourceClaimStatuses)
	return nil
}

// waitClaimEnv waits until the pod's log shows the variable the driver's CDI spec
// sets for its claim's request: claim_<claim>_<request>, other characters as _.
func (c *schedCluster) waitClaimEnv(ctx context.Context, t *testing.T, p corev1.Pod, claim string) {
	t.Helper()
	want := regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString("claim_"+claim+"_"+build.DeviceRequestName, "_")
	var logs string
	c.eventually(ctx, t, "the claims line of "+p.Name, func() (bool, error) {
		raw, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		logs = string(raw)
		return printedClaims(logs) != "", err
	})
	if got := printedClaims(logs); got != want {
		t.Errorf("%s's environment has claims %q, want %q (its own only)", p.Name, got, want)
	}
}

// printedClaims is what the script printed after "claims ", or "".
func printedClaims(logs string) string {
	for line := range strings.Lines(logs) {
		if claims, ok := strings.CutPrefix(strings.TrimSpace(line), "claims "); ok {
			return claims
		}
	}
	return ""
}
