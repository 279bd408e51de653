package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// lureServer is a container that answers HTTP on the notebook's port, as a pod
// waiting for a victim's browser (and its token) would.
func lureServer() corev1.Container {
	return corev1.Container{Name: "tensorflow", Image: images.Python, Command: []string{"python3", "-m", "http.server", "8888"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8888, Protocol: corev1.ProtocolTCP}}}
}

// testNotebookLures: a job from the notebook's account whose pods are labelled as the
// notebook's gets pods without the label, so the notebook's Service does not list
// them; a pod an admin labels so joins the Service (the selector is a label), but
// tfk8s notebook open forwards to JupyterLab, not to it.
func testNotebookLures(ctx context.Context, t *testing.T, c *jobsCluster) {
	nb := impersonate(t, c.kubeconfig, "system:serviceaccount:default:notebook",
		"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")
	job := testutil.MakeTFJob("lure", "default").Workers(1).Obj()
	// The notebook's account names itself as the creator, as tfk8s submit does for it.
	job.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:default:notebook"}
	tmpl := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template
	tmpl.Labels = map[string]string{tfv1.LabelNotebook: "notebook"}
	tmpl.Spec.Containers = []corev1.Container{lureServer()}
	if err := nb.Create(ctx, job); err != nil {
		c.fail(t, "the lure job, as the notebook's account: %v", err)
	}
	defer c.tfk8s(ctx, "delete", "lure")
	if err := c.waitAllRunning(ctx, "lure", 1, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "the lure job's pod: %v", err)
	}
	pod := c.pod(ctx, t, "lure", "worker", 0)
	if v, ok := pod.Labels[tfv1.LabelNotebook]; ok {
		t.Errorf("pod %s is labelled %s=%s: the template's label reached the pod", pod.Name, tfv1.LabelNotebook, v)
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lure-pod", Namespace: "default", Labels: map[string]string{tfv1.LabelNotebook: "notebook"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{lureServer()}}}
	if err := c.cl.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	defer c.cl.Delete(context.WithoutCancel(ctx), bare)

	// Once the Service lists the admin's pod, it has seen the job's, created before.
	var endpoints []string
	c.eventually(ctx, t, "the notebook's Service to list lure-pod", func() (bool, error) {
		endpoints = nil
		slices := &discoveryv1.EndpointSliceList{}
		err := c.cl.List(ctx, slices, client.InNamespace("default"), client.MatchingLabels{discoveryv1.LabelServiceName: "notebook"})
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil {
					endpoints = append(endpoints, e.TargetRef.Name)
				}
			}
		}
		return strings.Contains(strings.Join(endpoints, " "), "lure-pod"), err
	})
	if strings.Contains(strings.Join(endpoints, " "), pod.Name) {
		t.Errorf("the notebook's Service lists %v: the job's pod %s joined it", endpoints, pod.Name)
	}

	jupyter, closeOpen := openNotebook(ctx, t, c)
	defer closeOpen()
	if code := jupyter.status(ctx, t, "/api/kernels", true); code != http.StatusOK {
		t.Errorf("GET /api/kernels through notebook open: %d, want JupyterLab's 200: the forward reached a lure", code)
	}
}

// testFromRunRecord: the notebook rewrites a run's run.json in the bucket to name
// kube-system and hostPID; submit --from-run by the admin creates nothing, shows the
// job in namespace default, and says what it ignored.
func testFromRunRecord(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "--name", "rec", "--image", images.Python, "--workers", "1", "--artifacts", "/tmp/out",
		"--", "python3", "-c", "print('recorded')")
	job := c.job(ctx, t, "rec")
	run := tfjob.RunID(string(job.UID))
	s3cfg, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, c.config)
	if err != nil {
		t.Fatal(err)
	}
	s3, err := storage.New(s3cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := jobs.ArtifactsBase(job).Join(storage.RunRecordName)
	c.waitFinished(ctx, t, "rec")
	c.mustTfk8s(ctx, t, "delete", "rec", "--wait")
	rec := &tfjob.RunRecord{}
	if found, err := s3.GetJSON(ctx, u, rec); err != nil || !found {
		t.Fatalf("reading %s: found %v, %v", u, found, err)
	}
	rec.Namespace, rec.Job.Namespace = "kube-system", "kube-system"
	rec.Job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.HostPID = true
	body, _ := json.Marshal(rec)
	if err := s3.PutObject(ctx, u, strings.NewReader(string(body)), int64(len(body)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}

	r := c.tfk8s(ctx, "submit", "--from-run", "rec/"+run)
	if r.code == 0 || !strings.Contains(r.stderr, `ignored namespace "kube-system"`) || !strings.Contains(r.stderr, "the job is shown, not submitted") ||
		!strings.Contains(r.stdout, "hostPID: true") || !strings.Contains(r.stdout, "namespace: default") {
		t.Errorf("submit --from-run of a rewritten record: %s\nwant a failure, the job shown in default, kube-system ignored, nothing submitted", r)
	}
	for _, ns := range []string{"default", "kube-system"} {
		if err := c.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rec"}, &tfv1.TFJob{}); err == nil {
			t.Errorf("tfjob %s/rec exists: the rewritten record was submitted", ns)
		}
	}
}
