package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// testNotebookPolicy: as the account of the notebook named notebook, in namespace
// default, the exploit of issue 24 (a TFJob mounting Secret victim, read back through
// the job's logs) is refused at admission, naming the field, and so are a job running
// as another account and one on the host's network; a job mounting the notebook's own
// S3 Secret runs, and its log shows the Secret's keys.
func testNotebookPolicy(ctx context.Context, t *testing.T, c *jobsCluster) {
	password := "hunter2-" + randomID()
	victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"},
		StringData: map[string]string{"password": password}}
	if err := c.cl.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	defer c.cl.Delete(ctx, victim)
	nb := impersonate(t, c.kubeconfig, "system:serviceaccount:default:notebook",
		"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")

	// readSecret is a job whose worker prints every file of the Secret mounted at /s.
	readSecret := func(name, secret string) *tfv1.TFJob {
		j := testutil.MakeTFJob(name, "default").Workers(1).Obj()
		j.Annotations = map[string]string{tfv1.AnnotationCreator: "system:serviceaccount:default:notebook"}
		spec := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
		spec.Containers[0].Image = images.Python
		spec.Containers[0].Command = []string{"python3", "-c",
			"import os\nfor f in sorted(os.listdir('/s')):\n    if not f.startswith('.'): print(f, open('/s/' + f).read())"}
		spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}
		spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		return j
	}
	w := "spec.tfReplicaSpecs.Worker.template.spec."
	exploit := readSecret("exploit", "victim")
	asBuilder := readSecret("asbuilder", "notebook-s3")
	asBuilder.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.ServiceAccountName = "builder"
	onHost := readSecret("onhost", "notebook-s3")
	onHost.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.HostNetwork = true
	privileged := readSecret("privileged", "notebook-s3")
	privileged.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	for _, tc := range []struct {
		job         *tfv1.TFJob
		field, want string
	}{
		{exploit, w + "volumes[0].secret.secretName", "Secret victim: a TFJob from system:serviceaccount:default:notebook may reference only"},
		{asBuilder, w + "serviceAccountName", "runs as the default ServiceAccount or notebook, no other"},
		{onHost, w + "hostNetwork", "may not ask for host access"},
		{privileged, w + "containers[0].securityContext.privileged", "may not ask for host access"},
	} {
		err := nb.Create(ctx, tc.job)
		if err == nil {
			defer c.tfk8s(ctx, "delete", tc.job.Name)
		}
		if err == nil || !strings.Contains(err.Error(), tc.field+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s created as the notebook's account: %v; want a refusal naming %s", tc.job.Name, err, tc.field)
		}
	}
	if r := c.tfk8s(ctx, "logs", "exploit"); r.code == 0 || strings.Contains(r.stdout+r.stderr, password) {
		t.Errorf("tfk8s logs exploit: %s; want no job, and no password", r)
	}

	// The notebook's own S3 Secret is the jobs' to read.
	own := readSecret("ownsecret", "notebook-s3")
	if err := nb.Create(ctx, own); err != nil {
		c.fail(t, "a job mounting the notebook's S3 Secret, as the notebook's account: %v", err)
	}
	defer c.tfk8s(ctx, "delete", "ownsecret")
	if job := c.waitFinished(ctx, t, "ownsecret"); job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "ownsecret %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	if logs := c.mustTfk8s(ctx, t, "logs", "ownsecret").stdout; !strings.Contains(logs, "endpoint ") {
		t.Errorf("ownsecret's log does not show the notebook's S3 Secret's keys:\n%s", logs)
	}
}

// testNotebookTenants: with notebook (started by tfk8s notebook start, its home
// notebook-home holding JupyterLab's token) and a second notebook's account nb-a in
// namespace default, issue 37's holes are closed at admission. A job from nb-a
// mounting notebook-home, through a template's persistentVolumeClaim or through
// spec.volumes[].existingClaim, is refused naming the field and the claim; nb-a's
// patch giving vjob, another user's job, a TensorBoard is refused, and vjob-tensorboard
// never appears; nb-a may still suspend vjob.
func testNotebookTenants(ctx context.Context, t *testing.T, c *jobsCluster) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb-a", Namespace: "default",
		Labels: map[string]string{tfv1.LabelNotebook: "nb-a"}}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "nb-a", Namespace: "default"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{tfv1.GroupVersion.Group}, Resources: []string{"tfjobs"}, Verbs: []string{"create", "get", "list", "patch", "delete"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nb-a", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nb-a"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nb-a", Namespace: "default"}}}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := c.cl.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		defer c.cl.Delete(ctx, obj)
	}
	who := "system:serviceaccount:default:nb-a"
	nbA := impersonate(t, c.kubeconfig, who, "system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated")
	mount := func(name string, existing bool) *tfv1.TFJob {
		j := testutil.MakeTFJob(name, "default").Workers(1).Obj()
		j.Annotations = map[string]string{tfv1.AnnotationCreator: who}
		if existing {
			j.Spec.Volumes = []tfv1.JobVolume{{Name: "home", MountPath: "/victim", ExistingClaim: "notebook-home"}}
			return j
		}
		spec := &j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
		spec.Volumes = []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "notebook-home"}}}}
		return j
	}
	for _, tc := range []struct {
		job   *tfv1.TFJob
		field string
	}{
		{mount("stealtemplate", false), "spec.tfReplicaSpecs.Worker.template.spec.volumes[0].persistentVolumeClaim.claimName"},
		{mount("stealvolume", true), "spec.volumes[0].existingClaim"},
	} {
		err := nbA.Create(ctx, tc.job)
		if err == nil {
			defer c.tfk8s(ctx, "delete", tc.job.Name)
		}
		if err == nil || !strings.Contains(err.Error(), tc.field+": claim notebook-home: a TFJob from "+who+" may mount only the claims its notebook owns") {
			t.Errorf("%s created as nb-a: %v; want a refusal naming %s", tc.job.Name, err, tc.field)
		}
	}

	// vjob is another user's, held so that it runs nothing.
	vjob := testutil.MakeTFJob("vjob", "default").Workers(1).Suspend(true).Obj()
	vjob.Annotations = map[string]string{tfv1.AnnotationCreator: "victim"}
	vjob.Spec.Volumes = []tfv1.JobVolume{{Name: "logs", MountPath: "/logs", Size: ptr.To(resource.MustParse("1Gi"))}}
	if err := c.cl.Create(ctx, vjob); err != nil {
		t.Fatal(err)
	}
	defer c.tfk8s(ctx, "delete", "vjob")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"tensorboard":{"enabled":true,"image":"`+images.Python+`"}}}`))
	err := nbA.Patch(ctx, &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "vjob", Namespace: "default"}}, patch)
	if err == nil || !strings.Contains(err.Error(), "spec.tensorboard: "+who+" may not change this on a job victim created") {
		t.Errorf("nb-a giving vjob a TensorBoard: %v; want a refusal naming spec.tensorboard", err)
	}
	suspend := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runPolicy":{"suspend":true}}}`))
	if err := nbA.Patch(ctx, &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "vjob", Namespace: "default"}}, suspend); err != nil {
		t.Errorf("nb-a suspending vjob: %v", err)
	}
	// The refusal came at admission: the job holds no TensorBoard, so the controller
	// has none to make.
	if job := c.job(ctx, t, "vjob"); job.Spec.TensorBoard != nil {
		t.Errorf("vjob's TensorBoard after nb-a's refused patch: %+v", job.Spec.TensorBoard)
	}
	err = c.cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "vjob-tensorboard"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Deployment vjob-tensorboard: %v; want none", err)
	}
}

// impersonate returns a client of the cluster of kubeconfig acting as user in groups.
func impersonate(t *testing.T, kubeconfig, user string, groups ...string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
