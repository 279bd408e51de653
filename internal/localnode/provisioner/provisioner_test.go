package provisioner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// TestProvision: only the selected node answers, with a directory of its own and a
// volume there; the other node makes nothing and tells the library to ignore the claim.
func TestProvision(t *testing.T) {
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team", Annotations: map[string]string{annSelectedNode: "node-b"}}}
	pods := func(context.Context, *corev1.PersistentVolumeClaim) ([]corev1.Pod, error) {
		return []corev1.Pod{claimPod("nb", ptr.To[int64](100), corev1.PodPending, false)}, nil
	}
	a := &nodeProvisioner{node: "node-a", dir: t.TempDir(), pods: pods}
	b := &nodeProvisioner{node: "node-b", dir: t.TempDir(), pods: pods}
	if a.ShouldProvision(ctx, claim) || !b.ShouldProvision(ctx, claim) {
		t.Errorf("ShouldProvision: node-a %t, node-b %t; want only node-b", a.ShouldProvision(ctx, claim), b.ShouldProvision(ctx, claim))
	}
	opts := controller.ProvisionOptions{PVName: "pvc-1", PVC: claim, StorageClass: storageClass(), SelectedNodeName: "node-b"}

	_, _, err := a.Provision(ctx, opts)
	var ignored *controller.IgnoredError
	if !errors.As(err, &ignored) {
		t.Errorf("node-a's Provision: %v, want an IgnoredError", err)
	}
	if entries, _ := os.ReadDir(a.dir); len(entries) != 0 {
		t.Errorf("node-a made %d entries", len(entries))
	}

	pv, state, err := b.Provision(ctx, opts)
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("node-b's Provision: %v, %v", state, err)
	}
	want := filepath.Join(b.dir, "pvc-1")
	if pv.Spec.Local.Path != want || volumeNode(pv) != "node-b" {
		t.Errorf("volume at %s on node %q, want %s on node-b", pv.Spec.Local.Path, volumeNode(pv), want)
	}
	if info, err := os.Stat(want); err != nil || !info.IsDir() || info.Mode().Perm() != 0o770 || info.Mode()&fs.ModeSetgid == 0 {
		t.Errorf("the volume's directory: %v, %v; want a directory of mode 02770, its pod's fsGroup's", info, err)
	} else if st := info.Sys().(*syscall.Stat_t); st.Gid != 100 {
		t.Errorf("the volume's directory has group %d, want 100, its pod's fsGroup", st.Gid)
	}
}

// TestDelete: only the volume's node deletes it, and only a directory of its own.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	a := &nodeProvisioner{node: "node-a", dir: t.TempDir()}
	b := &nodeProvisioner{node: "node-b", dir: t.TempDir()}
	path, err := makeVolumeDir(b.dir, "pvc-1", dirOwner{Mode: rootMode})
	if err != nil {
		t.Fatal(err)
	}
	pv := localVolume(controller.ProvisionOptions{PVName: "pvc-1", PVC: &corev1.PersistentVolumeClaim{}}, "node-b", path)

	if a.ShouldDelete(ctx, pv) || !b.ShouldDelete(ctx, pv) {
		t.Errorf("ShouldDelete: node-a %t, node-b %t; want only node-b", a.ShouldDelete(ctx, pv), b.ShouldDelete(ctx, pv))
	}
	var ignored *controller.IgnoredError
	if err := a.Delete(ctx, pv); !errors.As(err, &ignored) {
		t.Errorf("node-a's Delete: %v, want an IgnoredError", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("node-a's Delete touched node-b's volume: %v", err)
	}

	outside := localVolume(controller.ProvisionOptions{PVName: "pvc-2", PVC: &corev1.PersistentVolumeClaim{}}, "node-b", a.dir)
	if err := b.Delete(ctx, outside); err == nil || errors.As(err, &ignored) {
		t.Errorf("deleting a volume out of node-b's directory: %v, want a refusal", err)
	}
	if _, err := os.Stat(a.dir); err != nil {
		t.Errorf("the directory out of node-b's is gone: %v", err)
	}

	if err := b.Delete(ctx, pv); err != nil {
		t.Fatalf("node-b's Delete: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the volume's directory is still there: %v", err)
	}
}
