// Package provisioner provisions the PersistentVolumes of a local cluster's claims.
// Every node runs one for itself: a claim of the tfk8s-local class gets a directory
// under the node's volume directory once the scheduler has picked the node for the
// claim's first pod, as a local PersistentVolume that only that node's pods can mount.
// The volume and its directory go when the claim does.
//
// It is built on sig-storage-lib-external-provisioner, which watches claims and
// volumes; this package says what a volume is and does on the node's disk.
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

const (
	// Name is the provisioner of the tfk8s-local StorageClass.
	Name = "tfk8s.io/local"
	// ClassName is the StorageClass the provisioner serves, the cluster's default.
	ClassName = "tfk8s-local"
	// annSelectedNode is where the scheduler writes the node it picked for a claim of a
	// WaitForFirstConsumer class.
	annSelectedNode = "volume.kubernetes.io/selected-node"
)

// Provisioner provisions one node's volumes.
type Provisioner struct {
	controller *controller.ProvisionController
	log        logr.Logger
}

// New prepares the provisioner of node nodeName, whose volumes are directories of dir,
// and makes sure the StorageClass exists. ctx carries the logger and bounds the
// library's event recorder; give Run the same. There is no leader election: each node
// serves only its own claims and volumes.
//
// The library writes client-go's global scheme here without a lock, and a map written
// while another goroutine reads it crashes the process. So call New before any other
// goroutine of the process uses a clientset: with several nodes in one process, every
// New before the first Run.
func New(ctx context.Context, client kubernetes.Interface, nodeName, dir string) (*Provisioner, error) {
	if nodeName == "" {
		return nil, errors.New("no node name")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving the volume directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the volume directory: %w", err)
	}
	// The library logs through klog's contextual logger; so do we, with the node named.
	log := klog.FromContext(ctx).WithName("provisioner").WithValues("node", nodeName)
	ctx = klog.NewContext(ctx, log)
	p := &nodeProvisioner{node: nodeName, dir: dir, pods: func(ctx context.Context, claim *corev1.PersistentVolumeClaim) ([]corev1.Pod, error) {
		return claimPods(ctx, client, claim)
	}}
	ctrl := controller.NewProvisionController(ctx, client, Name, p, controller.LeaderElection(false))
	if err := ensureStorageClass(ctx, client); err != nil {
		return nil, err
	}
	return &Provisioner{controller: ctrl, log: log}, nil
}

// Run provisions, until ctx ends, the volumes of the tfk8s-local claims the scheduler
// placed on the node, and deletes them once released.
func (p *Provisioner) Run(ctx context.Context) {
	p.controller.Run(klog.NewContext(ctx, p.log))
}

// nodeProvisioner is what the library calls for one node: it decides which claims and
// volumes are the node's, and makes and removes their directories.
type nodeProvisioner struct {
	node string
	dir  string
	// pods lists the pods of a claim's namespace.
	pods func(context.Context, *corev1.PersistentVolumeClaim) ([]corev1.Pod, error)
}

var (
	_ controller.Provisioner   = (*nodeProvisioner)(nil)
	_ controller.Qualifier     = (*nodeProvisioner)(nil)
	_ controller.DeletionGuard = (*nodeProvisioner)(nil)
)

// ShouldProvision reports whether the scheduler placed the claim on this node. The
// other nodes skip it before the library announces that provisioning started.
func (p *nodeProvisioner) ShouldProvision(_ context.Context, claim *corev1.PersistentVolumeClaim) bool {
	return claim.Annotations[annSelectedNode] == p.node
}

// Provision creates the claim's directory, owned as its pods' fsGroup says
// (ownerFor), and returns its volume, pinned to this node.
// A claim placed on another node is ignored, for that node to serve.
func (p *nodeProvisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	if opts.SelectedNodeName != p.node {
		return nil, controller.ProvisioningFinished, &controller.IgnoredError{
			Reason: fmt.Sprintf("the claim is placed on node %q, not %s", opts.SelectedNodeName, p.node),
		}
	}
	pods, err := p.pods(ctx, opts.PVC)
	if err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	path, err := makeVolumeDir(p.dir, opts.PVName, ownerFor(opts.PVC, pods))
	if err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("creating the directory of volume %s: %w", opts.PVName, err)
	}
	return localVolume(opts, p.node, path), controller.ProvisioningFinished, nil
}

// ShouldDelete reports whether a released volume is this node's to delete.
func (p *nodeProvisioner) ShouldDelete(_ context.Context, pv *corev1.PersistentVolume) bool {
	return volumeNode(pv) == p.node
}

// Delete removes a released volume's directory; the library then deletes the volume.
// A volume of another node is ignored, and one whose path is not a directory of this
// node's volume directory is refused.
func (p *nodeProvisioner) Delete(_ context.Context, pv *corev1.PersistentVolume) error {
	if node := volumeNode(pv); node != p.node {
		return &controller.IgnoredError{Reason: fmt.Sprintf("volume %s is on node %q, not %s", pv.Name, node, p.node)}
	}
	if err := removeVolumeDir(p.dir, volumePath(pv)); err != nil {
		return fmt.Errorf("removing the directory of volume %s: %w", pv.Name, err)
	}
	return nil
}
