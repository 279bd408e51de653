package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// volumesScript prints, one "key=value" line each, what the pod's volumes hold.
const volumesScript = `
echo "cfg=$(cat /cfg/renamed) mode=$(stat -c %a /cfg/renamed) missing=$(ls /cfg | grep -c other)"
echo "secret=$(cat /sec/password)"
echo "labels=$(cat /info/labels)"
echo "name=$(cat /info/name)"
sa=/var/run/secrets/kubernetes.io/serviceaccount
echo "namespace=$(cat $sa/namespace)"
echo "ca=$(grep -c 'BEGIN CERTIFICATE' $sa/ca.crt)"
echo "token=$(cat $sa/token)"
echo "memory=$(awk '$2 == "/mem" {print $3}' /proc/mounts)"
echo "host=$(cat /host/file)"
`

// TestVolumes: ConfigMap, Secret, downward API, projected service-account token,
// memory emptyDir and hostPath volumes appear at their mount paths with their content.
func TestVolumes(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	ctx := context.Background()
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"key": "value", "other": "x"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sec"}, Data: map[string][]byte{"password": []byte("hunter2")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostDir := t.TempDir()
	if err := writeFile(hostDir+"/file", "from the host"); err != nil {
		t.Fatal(err)
	}
	pod := shPod("vols", ns, volumesScript)
	pod.Labels = map[string]string{"app": "tf"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items:                []corev1.KeyToPath{{Key: "key", Path: "renamed", Mode: ptr.To[int32](0o400)}},
		}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
		}}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi")),
		}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "info", MountPath: "/info"},
		{Name: "mem", MountPath: "/mem"}, {Name: "host", MountPath: "/host", ReadOnly: true},
	}
	created := createPod(t, pod)
	if !hasServiceAccountVolume(created) {
		t.Fatalf("the API server did not inject the service-account token volume: %+v", created.Spec.Volumes)
	}
	waitPhase(t, ns, "vols", corev1.PodSucceeded)
	got := map[string]string{}
	for _, line := range logLines(podLogs(t, ns, "vols", &corev1.PodLogOptions{})) {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	token := got["token"]
	delete(got, "token")
	want := map[string]string{
		"cfg": "value mode=400 missing=0", "secret": "hunter2", "labels": `app="tf"`, "name": "vols",
		"namespace": ns, "ca": "1", "memory": "tmpfs", "host": "from the host",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("volume contents (-want +got):\n%s", diff)
	}
	review, err := clientset.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("reviewing the pod's token: %v", err)
	}
	if wantUser := "system:serviceaccount:" + ns + ":default"; !review.Status.Authenticated || review.Status.User.Username != wantUser {
		t.Errorf("token authenticates as %q (authenticated %t, error %q), want %s", review.Status.User.Username, review.Status.Authenticated, review.Status.Error, wantUser)
	}
}

// hasServiceAccountVolume reports whether the pod got the projected token volume.
func hasServiceAccountVolume(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					return true
				}
			}
		}
	}
	return false
}

// TestSandbox: the root file system is the host's, read-only, /tmp is writable, the
// node's state directory is hidden, and the container has its own PID namespace.
func TestSandbox(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	script := `touch /usr/x 2>/dev/null && echo root=writable || echo root=readonly
touch /tmp/x && echo tmp=writable
echo state=$(ls -A ` + stateDir + ` | wc -l)
echo pid1=$(cat /proc/1/comm)
echo python=$(python3 -c 'print(6*7)')`
	createPod(t, shPod("sandbox", ns, script))
	waitPhase(t, ns, "sandbox", corev1.PodSucceeded)
	want := []string{"root=readonly", "tmp=writable", "state=0", "pid1=sh", "python=42"}
	if got := logLines(podLogs(t, ns, "sandbox", &corev1.PodLogOptions{})); !cmp.Equal(want, got) {
		t.Errorf("sandbox (-want +got):\n%s", cmp.Diff(want, got))
	}
}

// TestPersistentVolumeClaim: a claim without a class is bound by the local
// provisioner; what one pod writes there the next reads; the volume goes with the
// claim.
func TestPersistentVolumeClaim(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClaim := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
		}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}
	createPod(t, withClaim(shPod("write", ns, "echo checkpoint-42 > /data/ckpt")))
	waitPhase(t, ns, "write", corev1.PodSucceeded)
	createPod(t, withClaim(shPod("read", ns, "cat /data/ckpt")))
	waitPhase(t, ns, "read", corev1.PodSucceeded)
	if got := podLogs(t, ns, "read", &corev1.PodLogOptions{}); got != "checkpoint-42\n" {
		t.Errorf("read %q, want what the first pod wrote", got)
	}
	bound, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bound.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim %s, want Bound", bound.Status.Phase)
	}
	for _, name := range []string{"write", "read"} {
		if err := clientset.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, ns, name, 30*time.Second)
	}
	if err := clientset.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the claim's volume to be deleted", func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
		return err != nil && strings.Contains(err.Error(), "not found"), nil
	})
}
