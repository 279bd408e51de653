package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// quotaWindow is how long after its creation a refused job's pod creations are counted;
// quotaMaxPosts is how many it may cost the API server meanwhile: the batches 1, 2, 4, 8
// that met the quota, then one pod at each retry, 1, 2, 4, 8 and 16 s later.
const (
	quotaWindow   = 30 * time.Second
	quotaMaxPosts = 40
)

// TestQuotaRefusalIsAConditionNotAFlood: a job of 2,000 workers in a namespace whose
// ResourceQuota allows 10 pods costs the API server a few dozen pod creations in 30 s,
// as kube-apiserver's apiserver_request_total counts them, not one per missing pod on
// every retry; the job's PodCreationRefused condition names the quota in the API
// server's words, and turns False once the quota is raised and every pod is created.
func TestQuotaRefusalIsAConditionNotAFlood(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "ten-pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
	}
	if err := k8sClient.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	waitQuotaHard(t, ns, "ten-pods", "10")
	startController(t)

	before := podPosts(t)
	// Run by the agent, the pods carry the cluster in a few hundred bytes rather than
	// 2,000 addresses each.
	job := testutil.MakeTFJob("big", ns).Workers(2000).Artifacts("s3://bucket/runs", "/model").Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	refused := waitPodCreationRefused(t, ns, "big", metav1.ConditionTrue, 30*time.Second)
	if refused.Reason != tfv1.ReasonPodCreationFailed || !strings.Contains(refused.Message, "exceeded quota: ten-pods") {
		t.Errorf("PodCreationRefused: reason %s, message %q; want %s and the quota's refusal", refused.Reason, refused.Message, tfv1.ReasonPodCreationFailed)
	}
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonPodCreationFailed); !strings.Contains(msg, "exceeded quota: ten-pods") {
		t.Errorf("%s event %q does not name the quota", tfv1.ReasonPodCreationFailed, msg)
	}

	// Count the pod creations over the window, and stop at once if they pass the bound.
	var posts float64
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Until(created.Add(quotaWindow)), true, func(context.Context) (bool, error) {
		posts = podPosts(t) - before
		if posts > quotaMaxPosts {
			return false, fmt.Errorf("%.0f pod creations %v after the job was created", posts, time.Since(created).Round(time.Second))
		}
		return false, nil
	})
	if !wait.Interrupted(err) {
		t.Fatalf("a job refused by a 10-pod quota: %v, want at most %d in %v", err, quotaMaxPosts, quotaWindow)
	}
	t.Logf("a job of 2,000 workers under a 10-pod quota: %.0f pod creations in %v", posts, quotaWindow)
	if pods, err := jobPods(ctx, ns, "big"); err != nil || len(pods) != 10 {
		t.Errorf("the job has %d pods (%v), want the 10 the quota allows", len(pods), err)
	}

	// The quota is raised: the next try (at most createBackoffMax later) creates every pod.
	quota = &corev1.ResourceQuota{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ten-pods"}, quota); err != nil {
		t.Fatal(err)
	}
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
	if err := k8sClient.Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	cleared := waitPodCreationRefused(t, ns, "big", metav1.ConditionFalse, 2*time.Minute)
	if cleared.Reason != tfv1.ReasonPodsCreated {
		t.Errorf("PodCreationRefused False with reason %s, want %s", cleared.Reason, tfv1.ReasonPodsCreated)
	}
	if pods, err := jobPods(ctx, ns, "big"); err != nil || len(pods) != 2000 {
		t.Errorf("the job has %d pods (%v) once the quota allows them, want 2000", len(pods), err)
	}
}

// TestPodSecurityRefusalIsACondition: a namespace whose Pod Security level refuses the
// job's pods gives the job the PodCreationRefused condition with Pod Security's
// message; once the namespace allows them, the pods are created and it turns False.
func TestPodSecurityRefusalIsACondition(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	setNamespaceLabel(t, ns, "pod-security.kubernetes.io/enforce", "restricted")
	startController(t)
	job := testutil.MakeTFJob("psa", ns).Workers(2).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	refused := waitPodCreationRefused(t, ns, "psa", metav1.ConditionTrue, 30*time.Second)
	if refused.Reason != tfv1.ReasonPodCreationFailed || !strings.Contains(refused.Message, `violates PodSecurity "restricted`) {
		t.Errorf("PodCreationRefused: reason %s, message %q; want %s and Pod Security's refusal", refused.Reason, refused.Message, tfv1.ReasonPodCreationFailed)
	}
	setNamespaceLabel(t, ns, "pod-security.kubernetes.io/enforce", "privileged")
	waitPods(t, ns, "psa", "psa-worker-0", "psa-worker-1")
	waitPodCreationRefused(t, ns, "psa", metav1.ConditionFalse, 30*time.Second)
}

// podPosts is kube-apiserver's count of pod creations so far, refused ones included.
func podPosts(t *testing.T) float64 {
	t.Helper()
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(cp.Config.Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["resource"] == "pods" && labels["subresource"] == "" && labels["verb"] == "POST" {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// waitQuotaHard waits until kube-controller-manager has given the quota its hard
// limit of pods, which quota admission enforces.
func waitQuotaHard(t *testing.T, ns, name, pods string) {
	t.Helper()
	testutil.Eventually(t, "the quota's status", func(ctx context.Context) (bool, error) {
		q := &corev1.ResourceQuota{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q); err != nil {
			return false, err
		}
		hard, ok := q.Status.Hard[corev1.ResourcePods]
		return ok && hard.String() == pods, nil
	})
}

// waitPodCreationRefused waits up to timeout until the job's PodCreationRefused
// condition has the status, and returns it.
func waitPodCreationRefused(t *testing.T, ns, name string, status metav1.ConditionStatus, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	var last *tfv1.TFJob
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, name)
		if err != nil {
			return false, nil
		}
		last = job
		got = findJobCondition(job, tfv1.JobPodCreationRefused)
		return got != nil && got.Status == status, nil
	})
	if err != nil {
		var conditions []metav1.Condition
		if last != nil {
			conditions = last.Status.Conditions
		}
		t.Fatalf("waiting %v for PodCreationRefused %s on TFJob %s: %v; conditions %+v", timeout, status, name, err, conditions)
	}
	return *got
}

// findJobCondition returns the job's condition of type typ, or nil.
func findJobCondition(job *tfv1.TFJob, typ tfv1.JobState) *metav1.Condition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == string(typ) {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// setNamespaceLabel sets a label of the namespace.
func setNamespaceLabel(t *testing.T, ns, key, value string) {
	t.Helper()
	testutil.Eventually(t, "the label "+key+" of namespace "+ns, func(ctx context.Context) (bool, error) {
		n := &corev1.Namespace{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return false, err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
		return true, k8sClient.Update(ctx, n)
	})
}
