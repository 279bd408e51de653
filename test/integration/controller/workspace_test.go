package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestVolumesAreClaimedAndMounted: each volume gets its claim (owned by the job unless
// retained, the existing claim used as is), mounted where asked in every container of
// every replica, read-only when asked.
func TestVolumesAreClaimedAndMounted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-fast"}, Provisioner: "example.com/fast"}
	if err := k8sClient.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), class) })
	shared := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if err := k8sClient.Create(ctx, shared); err != nil {
		t.Fatal(err)
	}
	job := testutil.MakeTFJob("vol", ns).PS(1).Workers(2).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{
		{Name: "data", MountPath: "/data", ReadOnly: true, Size: ptr.To(resource.MustParse("2Gi")), StorageClassName: ptr.To(class.Name)},
		{Name: "logs", MountPath: "/logs", Size: ptr.To(resource.MustParse("1Gi")), Retain: true},
		{Name: "shared", MountPath: "/shared", ExistingClaim: "shared"},
	}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "vol", "vol-ps-0", "vol-worker-0", "vol-worker-1")
	for name, pod := range pods {
		got := map[string]string{}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				got[v.Name] = v.PersistentVolumeClaim.ClaimName
			}
		}
		want := map[string]string{"tfk8s-volume-data": "vol-data", "tfk8s-volume-logs": "vol-logs", "tfk8s-volume-shared": "shared"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: claims (-want +got):\n%s", name, diff)
		}
		mounts := map[string]bool{}
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if strings.HasPrefix(m.Name, "tfk8s-volume-") {
				mounts[m.MountPath] = m.ReadOnly
			}
		}
		if diff := cmp.Diff(map[string]bool{"/data": true, "/logs": false, "/shared": false}, mounts); diff != "" {
			t.Errorf("%s: mounts, path to read-only (-want +got):\n%s", name, diff)
		}
	}
	data := claim(t, ns, "vol-data")
	if !metav1.IsControlledBy(data, job) {
		t.Errorf("claim vol-data has owners %v, want the job", data.OwnerReferences)
	}
	if got := ptr.Deref(data.Spec.StorageClassName, ""); got != class.Name {
		t.Errorf("claim vol-data has class %q, want %q", got, class.Name)
	}
	if got := data.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "2Gi" {
		t.Errorf("claim vol-data requests %s, want 2Gi", got.String())
	}
	if got := data.Spec.AccessModes; !slices.Equal(got, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("claim vol-data access modes %v, want ReadWriteMany", got)
	}
	if logs := claim(t, ns, "vol-logs"); len(logs.OwnerReferences) != 0 {
		t.Errorf("retained claim vol-logs has owners %v, want none: it outlives the job", logs.OwnerReferences)
	}
}

// TestUnknownStorageClassFailsTheJob: a volume whose class does not exist fails the job
// before any pod is created, naming the field.
func TestUnknownStorageClassFailsTheJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("noclass", ns).Workers(2).Obj()
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To("no-such-class")}}
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(t, ns, "noclass", tfv1.JobFailed)
	c := conditionOf(got, tfv1.JobFailed)
	if c.Reason != tfv1.ReasonInvalidVolume || !strings.Contains(c.Message, `spec.volumes[0].storageClassName: storage class "no-such-class" does not exist`) {
		t.Errorf("Failed condition %s: %q; want %s naming spec.volumes[0].storageClassName", c.Reason, c.Message, tfv1.ReasonInvalidVolume)
	}
	if msg := eventMessage(t, ns, got.UID, tfv1.ReasonInvalidVolume); msg != c.Message {
		t.Errorf("event %s says %q, want the condition's message", tfv1.ReasonInvalidVolume, msg)
	}
	if pods, err := jobPods(context.Background(), ns, "noclass"); err != nil || len(pods) != 0 {
		t.Errorf("pods %v (%v), want none", pods, err)
	}
}

// TestTensorBoardLivesWithTheJobAndItsTTL: the job's TensorBoard (TensorBoard fed by the
// agent's mirror of the job's artifacts) and its Service appear with the job, stay
// once it finished until its time to live has passed, are deleted then, and come back
// for another time to live when `tfk8s tensorboard` asks for them.
func TestTensorBoardLivesWithTheJobAndItsTTL(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("tb", ns).Workers(1).Artifacts("s3://runs/exp", "/workspace/logs").Obj()
	job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, TTLSecondsAfterFinished: ptr.To[int32](3)}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	deploy := waitTensorBoard(t, ns, "tb", true)
	containers := deploy.Spec.Template.Spec.Containers
	if len(containers) != 2 || containers[0].Name != "mirror" {
		t.Fatalf("TensorBoard pod has containers %v, want mirror and tensorboard", containers)
	}
	created, err := getJob(ctx, ns, "tb")
	if err != nil {
		t.Fatal(err)
	}
	wantMirror := "tfk8s-agent mirror --from s3://runs/exp/" + ns + "/tb/" + tfjob.RunID(string(created.UID)) + "/ --to /tensorboard --interval 5s --include *tfevents*"
	if got := strings.Join(containers[0].Command, " "); got != wantMirror {
		t.Errorf("mirror command %q, want %q", got, wantMirror)
	}
	if _, ok := deploy.Spec.Template.Labels[tfv1.LabelJobName]; ok {
		t.Error("the TensorBoard pod carries the job-name label: the job's Service and pod count would take it for a replica")
	}
	testutil.Eventually(t, "the TensorBoard Service", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tb-tensorboard"}, &corev1.Service{})
		return err == nil, err
	})
	running := waitJob(t, ns, "tb", "status.tensorBoard", func(j *tfv1.TFJob) bool { return j.Status.TensorBoard != nil })
	if got, want := running.Status.TensorBoard.URL, "http://tb-tensorboard."+ns+".svc:6006/"; got != want {
		t.Errorf("status.tensorBoard.url %q, want %q", got, want)
	}

	waitPods(t, ns, "tb", "tb-worker-0")
	kubelet.SetExited(t, ns, "tb-worker-0", 0)
	done := waitCondition(t, ns, "tb", tfv1.JobSucceeded)
	if done.Status.TensorBoard == nil || done.Status.TensorBoard.ExpiresAt == nil {
		done = waitJob(t, ns, "tb", "status.tensorBoard.expiresAt", func(j *tfv1.TFJob) bool {
			return j.Status.TensorBoard != nil && j.Status.TensorBoard.ExpiresAt != nil
		})
	}
	waitTensorBoard(t, ns, "tb", false)
	gone := waitJob(t, ns, "tb", "status.tensorBoard cleared", func(j *tfv1.TFJob) bool { return j.Status.TensorBoard == nil })
	t.Logf("finished at %v; TensorBoard deleted, as announced for %v", gone.Status.CompletionTime, done.Status.TensorBoard.ExpiresAt)

	patch := client.MergeFrom(gone.DeepCopy())
	metav1.SetMetaDataAnnotation(&gone.ObjectMeta, tfv1.AnnotationTensorBoardRequested, time.Now().UTC().Format(time.RFC3339))
	if err := k8sClient.Patch(ctx, gone, patch); err != nil {
		t.Fatal(err)
	}
	waitTensorBoard(t, ns, "tb", true)
	waitTensorBoard(t, ns, "tb", false)
}

// claim reads a claim of the namespace.
func claim(t *testing.T, ns, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	testutil.Eventually(t, "claim "+name, func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)
		return err == nil, client.IgnoreNotFound(err)
	})
	return pvc
}

// waitTensorBoard waits for the job's TensorBoard Deployment to exist (or be gone).
func waitTensorBoard(t *testing.T, ns, job string, exists bool) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	what := "the TensorBoard deployment of " + job
	if !exists {
		what += " deleted"
	}
	testutil.Eventually(t, what, func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: tfjob.TensorBoardName(job)}, d)
		if apierrors.IsNotFound(err) {
			return !exists, nil
		}
		return exists && err == nil && d.DeletionTimestamp == nil, err
	})
	return d
}

// waitJob waits until the job satisfies ok.
func waitJob(t *testing.T, ns, name, what string, ok func(*tfv1.TFJob) bool) *tfv1.TFJob {
	t.Helper()
	var job *tfv1.TFJob
	testutil.Eventually(t, what, func(ctx context.Context) (bool, error) {
		var err error
		job, err = getJob(ctx, ns, name)
		return err == nil && ok(job), err
	})
	return job
}
