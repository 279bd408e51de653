package controller

import (
	"context"
	"strings"
	"testing"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestTFConfigTooLargeWithoutAgentFailsJob: a job of 5,000 workers run without the
// agent would write hundreds of KiB of TF_CONFIG into each of its pods; it fails at once, with a
// condition that says what to do, and creates no pod.
func TestTFConfigTooLargeWithoutAgentFailsJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	if err := k8sClient.Create(context.Background(), testutil.MakeTFJob("huge", ns).PS(1).Workers(5000).Obj()); err != nil {
		t.Fatal(err)
	}
	job := waitCondition(t, ns, "huge", tfv1.JobFailed)
	c := findCondition(job, tfv1.JobFailed)
	t.Logf("Failed: %s: %s", c.Reason, c.Message)
	if c.Reason != tfv1.ReasonTFConfigTooLarge || !strings.Contains(c.Message, "run the job under the agent (set spec.code, spec.data or spec.artifacts)") {
		t.Errorf("Failed condition %s: %q; want reason %s and a message saying to run under the agent", c.Reason, c.Message, tfv1.ReasonTFConfigTooLarge)
	}
	pods, err := jobPods(context.Background(), ns, "huge")
	if err != nil || len(pods) != 0 {
		t.Errorf("the failed job has %d pods (%v); want none", len(pods), err)
	}
}

// TestLargeAgentJobPodsCarryTheCluster: the pods of a job of 300 workers run by the
// agent carry the cluster, a few hundred bytes, in place of TF_CONFIG.
func TestLargeAgentJobPodsCarryTheCluster(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("wide", ns).PS(1).Workers(300).Artifacts("s3://bucket/runs", "/model").Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	names := []string{"wide-ps-0"}
	for i := range int32(300) {
		names = append(names, tfjob.PodName("wide", tfv1.ReplicaTypeWorker, i))
	}
	pods := waitPods(t, ns, "wide", names...)
	for _, name := range []string{"wide-ps-0", "wide-worker-299"} {
		cluster := envValue(pods[name], tfconfig.EnvCluster)
		t.Logf("%s: %s=%s", name, tfconfig.EnvCluster, cluster)
		if len(cluster) > 300 || envValue(pods[name], tfjob.EnvTFConfig) != "" {
			t.Errorf("%s carries %s of %d bytes and TF_CONFIG %.40q; want only the cluster, under 300 bytes",
				name, tfconfig.EnvCluster, len(cluster), envValue(pods[name], tfjob.EnvTFConfig))
		}
	}
}
