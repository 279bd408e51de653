package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	// ProvisionerName is the provisioner of the tfk8s-local StorageClass.
	ProvisionerName = "tfk8s.io/local"
	// annProvisionedBy marks the volumes a provisioner created, for it to delete them.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// defaultClaimSize is the capacity given to a claim that requests none.
	defaultClaimSize = "1Gi"
)

// provisioner binds a hostPath PersistentVolume, a directory under the node's state
// directory, to each unbound claim of the tfk8s-local class or of no class, and
// deletes the volume and its directory once the claim is gone.
type provisioner struct {
	client   kubernetes.Interface
	nodeName string
	dir      string
	log      logr.Logger
}

// start ensures the StorageClass exists and watches claims and volumes until ctx ends.
func (p *provisioner) start(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: LocalStorageClass},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := p.client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", LocalStorageClass, err)
	}
	factory := informers.NewSharedInformerFactory(p.client, 0)
	claims := factory.Core().V1().PersistentVolumeClaims().Informer()
	volumes := factory.Core().V1().PersistentVolumes().Informer()
	if _, err := claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.provision(ctx, obj.(*corev1.PersistentVolumeClaim)) },
		UpdateFunc: func(_, obj any) { p.provision(ctx, obj.(*corev1.PersistentVolumeClaim)) },
	}); err != nil {
		return fmt.Errorf("watching claims: %w", err)
	}
	if _, err := volumes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.reclaim(ctx, obj.(*corev1.PersistentVolume)) },
		UpdateFunc: func(_, obj any) { p.reclaim(ctx, obj.(*corev1.PersistentVolume)) },
	}); err != nil {
		return fmt.Errorf("watching volumes: %w", err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the %v cache", typ)
		}
	}
	return nil
}

// volumeName is the PersistentVolume created for a claim.
func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// servedClaim reports whether the provisioner serves a claim: unbound, pending, of the
// tfk8s-local class or of none.
func servedClaim(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.VolumeName != "" || pvc.Status.Phase != corev1.ClaimPending || pvc.DeletionTimestamp != nil {
		return false
	}
	return pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == LocalStorageClass
}

// localVolume is the hostPath PersistentVolume pre-bound to a claim and pinned to the
// node.
func localVolume(pvc *corev1.PersistentVolumeClaim, nodeName, path string) *corev1.PersistentVolume {
	size := resource.MustParse(defaultClaimSize)
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		size = q
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volumeName(pvc), Annotations: map[string]string{annProvisionedBy: ProvisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr.To(corev1.HostPathDirectory)},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
				}}}},
			}},
		},
	}
}

// provision creates the directory and volume of a served claim; the control plane's
// volume binder completes the binding.
func (p *provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	if !servedClaim(pvc) {
		return
	}
	path := filepath.Join(p.dir, string(pvc.UID))
	if err := os.MkdirAll(path, 0o777); err != nil {
		p.log.Error(err, "Creating volume directory", "claim", pvc.Namespace+"/"+pvc.Name)
		return
	}
	_ = os.Chmod(path, 0o777)
	_, err := p.client.CoreV1().PersistentVolumes().Create(ctx, localVolume(pvc, p.nodeName, path), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		p.log.Error(err, "Creating volume", "claim", pvc.Namespace+"/"+pvc.Name)
		return
	}
	p.log.V(2).Info("Provisioned volume", "claim", pvc.Namespace+"/"+pvc.Name, "path", path)
}

// reclaim deletes a released volume the provisioner created, and its directory.
func (p *provisioner) reclaim(ctx context.Context, pv *corev1.PersistentVolume) {
	if pv.Annotations[annProvisionedBy] != ProvisionerName || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.HostPath == nil {
		return
	}
	if dir := pv.Spec.HostPath.Path; filepath.Dir(dir) == filepath.Clean(p.dir) {
		if err := os.RemoveAll(dir); err != nil {
			p.log.Error(err, "Removing volume directory", "volume", pv.Name)
			return
		}
	}
	err := p.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		p.log.Error(err, "Deleting released volume", "volume", pv.Name)
	}
}
