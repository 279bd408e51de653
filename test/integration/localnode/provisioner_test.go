package localnode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/localnode/provisioner"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// annSelectedNode is where the scheduler writes the node it picked for a claim.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// classSummary is what a user sees of a StorageClass.
type classSummary struct {
	Default, Provisioner, ReclaimPolicy, BindingMode string
}

func summarize(sc *storagev1.StorageClass) classSummary {
	return classSummary{
		Default:       sc.Annotations["storageclass.kubernetes.io/is-default-class"],
		Provisioner:   sc.Provisioner,
		ReclaimPolicy: string(ptr.Deref(sc.ReclaimPolicy, "")),
		BindingMode:   string(ptr.Deref(sc.VolumeBindingMode, "")),
	}
}

// wantClass is the tfk8s-local class: the default, deleting its volumes with their
// claims, binding them where the claim's first pod goes.
var wantClass = classSummary{Default: "true", Provisioner: provisioner.Name, ReclaimPolicy: "Delete", BindingMode: "WaitForFirstConsumer"}

// TestStorageClass: the provisioners replaced the home-made node's class, which bound
// volumes at once, with the one wanted.
func TestStorageClass(t *testing.T) {
	t.Parallel()
	sc, err := clientset.StorageV1().StorageClasses().Get(context.Background(), provisioner.ClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.UID == outdatedClass.UID {
		t.Errorf("the outdated class is still there")
	}
	if diff := cmp.Diff(wantClass, summarize(sc)); diff != "" {
		t.Errorf("StorageClass %s (-want +got):\n%s", provisioner.ClassName, diff)
	}
}

// ignoreNotFound ignores NotFound: a poll waits through it.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// TestProvisioning: a claim placed on a node gets a volume of its size on that node, in
// a directory of that node's provisioner only, and the claim is bound to it; a claim of
// no class gets the same from the default class. Deleting the claim deletes the
// volume and its directory.
func TestProvisioning(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	cases := []struct {
		name, node, size string
		class            *string
		mode             corev1.PersistentVolumeAccessMode
	}{
		{name: "tfk8s-local", node: nodeB, size: "2Gi", class: ptr.To(provisioner.ClassName), mode: corev1.ReadWriteOnce},
		{name: "no class", node: nodeA, size: "3Gi", mode: corev1.ReadWriteMany},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claim := makeClaim(t, ns, tc.class, tc.node, tc.size, tc.mode)
			pv := waitBound(t, claim)
			want := volumeSummary{
				Node: tc.node, Path: filepath.Join(volumeDirs[tc.node], pv.Name), Size: tc.size,
				Modes: []corev1.PersistentVolumeAccessMode{tc.mode}, Class: provisioner.ClassName,
				ProvisionedBy: provisioner.Name, ReclaimPolicy: "Delete",
			}
			if diff := cmp.Diff(want, summarizeVolume(pv)); diff != "" {
				t.Errorf("volume (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]bool{nodeA: tc.node == nodeA, nodeB: tc.node == nodeB}, volumeDirsHolding(pv.Name)); diff != "" {
				t.Errorf("the nodes with a directory for the volume (-want +got):\n%s", diff)
			}
			if err := clientset.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), claim.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, "the volume deleted with its claim", func(ctx context.Context) (bool, error) {
				_, err := clientset.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), ignoreNotFound(err)
			})
			if held := volumeDirsHolding(pv.Name); held[nodeA] || held[nodeB] {
				t.Errorf("the volume's directory outlived it: %v", held)
			}
		})
	}
}

// TestOtherClassLeftAlone: a claim of another provisioner's class, placed on a node, gets
// nothing from that node's provisioner, which meanwhile serves a claim of its own class
// created after it.
func TestOtherClassLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := testutil.Namespace(t, c)
	other := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "other-" + ns},
		Provisioner:       "example.com/other",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if _, err := clientset.StorageV1().StorageClasses().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.StorageV1().StorageClasses().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})
	foreign := makeClaim(t, ns, &other.Name, nodeA, "1Gi", corev1.ReadWriteOnce)
	testutil.Eventually(t, "the volume controller to hand the claim to its provisioner", func(ctx context.Context) (bool, error) {
		got, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, foreign.Name, metav1.GetOptions{})
		return err == nil && got.Annotations["volume.kubernetes.io/storage-provisioner"] == other.Provisioner, err
	})
	waitBound(t, makeClaim(t, ns, ptr.To(provisioner.ClassName), nodeA, "1Gi", corev1.ReadWriteOnce))

	got, err := clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.ClaimPending || got.Spec.VolumeName != "" {
		t.Errorf("the claim of class %s is %s with volume %q, want Pending with none", other.Name, got.Status.Phase, got.Spec.VolumeName)
	}
	name := "pvc-" + string(foreign.UID)
	if _, err := clientset.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("volume %s of the claim of class %s: %v, want NotFound", name, other.Name, err)
	}
	if held := volumeDirsHolding(name); held[nodeA] || held[nodeB] {
		t.Errorf("a directory was made for the claim of class %s: %v", other.Name, held)
	}
}

// TestClaimDirectoryOwner: the directory of a claim whose first pod sets fsGroup is
// that group's, setgid, mode 02770; one whose pod sets none is root's, mode 0755. No
// claim gets the 0777 that let every user of every pod mounting it write it.
func TestClaimDirectoryOwner(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	cases := []struct {
		name    string
		fsGroup *int64
		wantGID uint32
		want    os.FileMode
	}{
		{name: "fsgroup", fsGroup: ptr.To[int64](2000), wantGID: 2000, want: os.ModeDir | os.ModeSetgid | 0o770},
		{name: "nofsgroup", want: os.ModeDir | 0o755},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			claimName := "home-" + tc.name
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "nb-" + tc.name},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{FSGroup: tc.fsGroup},
					Containers:      []corev1.Container{{Name: "main", Image: "busybox"}},
					Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
					}}},
				},
			}
			if _, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			claim, err := clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claimName, Annotations: map[string]string{annSelectedNode: nodeA}},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pv := waitBound(t, claim)
			info, err := os.Lstat(pv.Spec.Local.Path)
			if err != nil {
				t.Fatal(err)
			}
			type owner struct {
				UID, GID uint32
				Mode     os.FileMode
			}
			st := info.Sys().(*syscall.Stat_t)
			if diff := cmp.Diff(owner{0, tc.wantGID, tc.want}, owner{st.Uid, st.Gid, info.Mode()}); diff != "" {
				t.Errorf("the claim's directory (-want +got):\n%s", diff)
			}
		})
	}
}

// makeClaim creates a claim of class (nil: none) placed on node, as the scheduler
// places a claim of a WaitForFirstConsumer class with its first pod.
func makeClaim(t *testing.T, ns string, class *string, node, size string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	t.Helper()
	claim, err := clientset.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "data-", Annotations: map[string]string{annSelectedNode: node}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return claim
}

// waitBound waits until claim is bound and returns its volume.
func waitBound(t *testing.T, claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	t.Helper()
	var pv *corev1.PersistentVolume
	testutil.Eventually(t, "claim "+claim.Name+" bound", func(ctx context.Context) (bool, error) {
		got, err := clientset.CoreV1().PersistentVolumeClaims(claim.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || got.Status.Phase != corev1.ClaimBound {
			return false, err
		}
		pv, err = clientset.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, err
	})
	return pv
}

// volumeSummary is what a user sees of a provisioned volume.
type volumeSummary struct {
	Node, Path, Size, Class, ProvisionedBy, ReclaimPolicy string
	Modes                                                 []corev1.PersistentVolumeAccessMode
}

func summarizeVolume(pv *corev1.PersistentVolume) volumeSummary {
	s := volumeSummary{
		Size: pv.Spec.Capacity.Storage().String(), Modes: pv.Spec.AccessModes, Class: pv.Spec.StorageClassName,
		ProvisionedBy: pv.Annotations["pv.kubernetes.io/provisioned-by"], ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy),
	}
	if pv.Spec.Local != nil {
		s.Path = pv.Spec.Local.Path
	}
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		for _, term := range a.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn {
					s.Node += strings.Join(e.Values, ",")
				}
			}
		}
	}
	return s
}

// volumeDirsHolding reports, by node, whether the node's volume directory holds a
// directory name.
func volumeDirsHolding(name string) map[string]bool {
	held := map[string]bool{}
	for node, dir := range volumeDirs {
		info, err := os.Stat(filepath.Join(dir, name))
		held[node] = err == nil && info.IsDir()
	}
	return held
}
