package api

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// notebookAccount makes a ServiceAccount labelled as a notebook's, as tfk8s notebook
// start does, that may create, patch and read TFJobs in ns, and returns a client that
// acts as it.
func notebookAccount(t *testing.T, ns, name string, label bool) client.Client {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if label {
		sa.Labels = map[string]string{tfv1.LabelNotebook: name}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{tfv1.GroupVersion.Group}, Resources: []string{"tfjobs"}, Verbs: []string{"create", "get", "patch", "update"}},
	}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// notebookJob is what tfk8s submit makes in notebook nb: storage in the notebook's S3
// Secret nb-s3, and nb's account recorded as its creator.
func notebookJob(ns, name string) *tfv1.TFJob {
	job := testutil.MakeTFJob(name, ns).Workers(1).Obj()
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "nb-s3"}}
	job.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:" + ns + ":nb"}
	return job
}

// policyCase is a change to the job nb submits, and the refusal it must meet from nb's
// account.
type policyCase struct {
	name   string
	change func(j *tfv1.TFJob)
	// wantField and wantMsg must both appear in the refusal; "" for none.
	wantField, wantMsg string
}

// checkNotebookCases creates each case's job (dry run) as the notebook's account nb,
// which must be refused as the case says, and as plain, an account that is no
// notebook's with the same role, which the policy does not hold.
func checkNotebookCases(t *testing.T, nb, plain client.Client, ns string, cases []policyCase) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := notebookJob(ns, "job")
			tc.change(job)
			err := nb.Create(ctx, job.DeepCopy(), client.DryRunAll)
			switch {
			case tc.wantField == "" && err != nil:
				t.Errorf("refused from the notebook's account: %v", err)
			case tc.wantField != "" && (err == nil || !strings.Contains(err.Error(), tc.wantField+": ") || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Errorf("from the notebook's account: %v; want a refusal naming %s: %s", err, tc.wantField, tc.wantMsg)
			}
			if err := plain.Create(ctx, job.DeepCopy(), client.DryRunAll); err != nil {
				t.Errorf("refused from an account that is no notebook's: %v", err)
			}
		})
	}
}

// worker is the job's Worker pod spec, for cases to change.
func worker(j *tfv1.TFJob) *corev1.PodSpec {
	return &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
}

// TestNotebookJobsStayInsideItsRights: a TFJob from a notebook's ServiceAccount that
// names another ServiceAccount, a Secret other than the notebook's S3 Secret, or host
// access is refused, the message naming the field; the job tfk8s submit makes in a
// notebook is accepted, and so is every refused job from an account that is no
// notebook's.
func TestNotebookJobsStayInsideItsRights(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	nb := notebookAccount(t, ns, "nb", true)
	plain := notebookAccount(t, ns, "builder", false)
	waitNotebookPolicy(t, nb, ns)

	w := "spec.tfReplicaSpecs.Worker.template.spec."
	cases := []policyCase{
		{name: "as tfk8s submit makes it", change: func(*tfv1.TFJob) {}},
		{name: "the notebook's own account", change: func(j *tfv1.TFJob) { worker(j).ServiceAccountName = "nb" }},
		{name: "the notebook's S3 Secret mounted", change: func(j *tfv1.TFJob) {
			worker(j).Volumes = []corev1.Volume{{Name: "s3", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nb-s3"}}}}
			worker(j).Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nb-s3"}}}}
		}},
		{name: "another account", change: func(j *tfv1.TFJob) { worker(j).ServiceAccountName = "builder" },
			wantField: w + "serviceAccountName", wantMsg: "runs as the default ServiceAccount or nb, no other"},
		{name: "another account, deprecated field", change: func(j *tfv1.TFJob) { worker(j).DeprecatedServiceAccount = "builder" },
			wantField: w + "serviceAccount", wantMsg: "no other"},
		{name: "a Secret volume", change: func(j *tfv1.TFJob) {
			worker(j).Volumes = []corev1.Volume{
				{Name: "s3", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nb-s3"}}},
				{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "victim"}}},
			}
		}, wantField: w + "volumes[1].secret.secretName", wantMsg: "Secret victim: a TFJob from system:serviceaccount:" + ns + ":nb may reference only the Secrets that account may read, and nb-s3"},
		{name: "a projected Secret", change: func(j *tfv1.TFJob) {
			worker(j).Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "victim"}}},
				}}}}}
		}, wantField: w + "volumes[0].projected.sources[1].secret.name", wantMsg: "Secret victim"},
		{name: "envFrom a Secret", change: func(j *tfv1.TFJob) {
			worker(j).Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "victim"}}}}
		}, wantField: w + "containers[0].envFrom[0].secretRef.name", wantMsg: "Secret victim"},
		{name: "env from a Secret's key in an init container", change: func(j *tfv1.TFJob) {
			worker(j).InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Env: []corev1.EnvVar{
				{Name: "A", Value: "a"},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "victim"}, Key: "password"}}},
			}}}
		}, wantField: w + "initContainers[0].env[1].valueFrom.secretKeyRef.name", wantMsg: "Secret victim"},
		{name: "another storage Secret", change: func(j *tfv1.TFJob) { j.Spec.Storage.SecretRef.Name = "victim" },
			wantField: "spec.storage.secretRef.name", wantMsg: "Secret victim"},
		{name: "hostNetwork", change: func(j *tfv1.TFJob) { worker(j).HostNetwork = true },
			wantField: w + "hostNetwork", wantMsg: "may not ask for host access"},
		{name: "networking mode HostNetwork", change: func(j *tfv1.TFJob) { j.Spec.Networking.Mode = tfv1.NetworkingModeHostNetwork },
			wantField: "spec.networking.mode", wantMsg: "may not ask for host access"},
		{name: "hostPID", change: func(j *tfv1.TFJob) { worker(j).HostPID = true }, wantField: w + "hostPID", wantMsg: "host access"},
		{name: "hostIPC", change: func(j *tfv1.TFJob) { worker(j).HostIPC = true }, wantField: w + "hostIPC", wantMsg: "host access"},
		{name: "hostPath", change: func(j *tfv1.TFJob) {
			worker(j).Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}, wantField: w + "volumes[0].hostPath", wantMsg: "host access"},
		{name: "privileged", change: func(j *tfv1.TFJob) {
			worker(j).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, wantField: w + "containers[0].securityContext.privileged", wantMsg: "host access"},
		{name: "added capabilities", change: func(j *tfv1.TFJob) {
			worker(j).Containers = append(worker(j).Containers, corev1.Container{Name: "side", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}})
		}, wantField: w + "containers[1].securityContext.capabilities.add", wantMsg: "host access"},
		{name: "hostPort", change: func(j *tfv1.TFJob) {
			worker(j).Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		}, wantField: w + "containers[0].ports.hostPort", wantMsg: "host access"},
	}
	checkNotebookCases(t, nb, plain, ns, cases)
}

// waitNotebookPolicy waits until the API server holds the notebook's account nb in ns to
// the policy: it reads the policy's parameters (the notebooks' accounts) through an
// informer.
func waitNotebookPolicy(t *testing.T, nb client.Client, ns string) {
	t.Helper()
	probe := notebookJob(ns, "probe")
	worker(probe).ServiceAccountName = "builder"
	waitRefused(t, nb, probe, "serviceAccountName", "create a job running as builder")
}

// waitRefused waits until c's dry-run create of probe is refused naming want: what
// says what c may still do, for the failure.
func waitRefused(t *testing.T, c client.Client, probe *tfv1.TFJob, want, what string) {
	t.Helper()
	var err error
	poll := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err = c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil, nil
	})
	if poll != nil {
		t.Fatalf("the notebook's account may still %s after 30 s: %v", what, poll)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("the probe was refused for another reason: %v", err)
	}
}
