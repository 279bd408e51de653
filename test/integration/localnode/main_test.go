// Package localnode tests local mode's node components against a real control plane:
// the provisioner, two of them at once as on a cluster of two nodes, with
// kube-controller-manager's volume controller binding the claims. The suite starts
// them on a cluster that has the home-made node's StorageClass, and stops them at the
// end. There is no scheduler: a test places a claim on a node with the annotation the
// scheduler writes.
package localnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localnode/provisioner"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The two nodes whose provisioners run through the suite.
const (
	nodeA = "node-a"
	nodeB = "node-b"
)

var (
	c         client.Client
	clientset kubernetes.Interface
	// volumeDirs are the volume directories of nodeA and nodeB.
	volumeDirs = map[string]string{}
	// outdatedClass is the home-made node's class, made before the provisioners start.
	outdatedClass *storagev1.StorageClass
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	return testutil.RunSuite(m, controlplane.Options{}, func(s *testutil.Suite) (func() error, error) {
		c = s.Client
		var err error
		if clientset, err = kubernetes.NewForConfig(s.ControlPlane.Config); err != nil {
			return nil, err
		}
		if outdatedClass, err = createOutdatedClass(); err != nil {
			return nil, err
		}
		ctx, stop := context.WithCancel(context.Background())
		var running sync.WaitGroup
		teardown := func() error {
			stop()
			errs := []error{waitStopped(&running)}
			for _, dir := range volumeDirs {
				errs = append(errs, os.RemoveAll(dir))
			}
			return errors.Join(errs...)
		}
		// Every provisioner is made before any runs, as New requires; New replaces the
		// outdated class.
		var provisioners []*provisioner.Provisioner
		for _, node := range []string{nodeA, nodeB} {
			if volumeDirs[node], err = os.MkdirTemp("", "tfk8s-volumes-"+node+"-"); err != nil {
				return nil, errors.Join(err, teardown())
			}
			p, err := provisioner.New(klog.NewContext(ctx, ctrl.Log.WithName(node)), clientset, node, volumeDirs[node])
			if err != nil {
				return nil, errors.Join(fmt.Errorf("making the provisioner of %s: %w", node, err), teardown())
			}
			provisioners = append(provisioners, p)
		}
		for _, p := range provisioners {
			running.Go(func() { p.Run(ctx) })
		}
		return teardown, nil
	})
}

// createOutdatedClass creates the tfk8s-local class as the home-made node did, binding
// its volumes at once, as a cluster made before the upstream kubelet has it.
func createOutdatedClass() (*storagev1.StorageClass, error) {
	sc, err := clientset.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: provisioner.ClassName},
		Provisioner:       provisioner.Name,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the outdated StorageClass: %w", err)
	}
	return sc, nil
}

// waitStopped waits for the provisioners to return, for 10 s at most.
func waitStopped(running *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("the provisioners did not stop within 10 s of their context's end")
	}
}
