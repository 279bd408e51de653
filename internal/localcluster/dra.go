package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tfk8s/tfk8s/internal/localnode"
)

// With --dra-gpus each node runs a DRA driver (localnode's dra.go) that publishes
// simulated GPUs; a DeviceClass of the driver's name selects them, so that a replica
// asks for them as it would for a vendor's: deviceClaim.deviceClassName gpu.tfk8s.io.

// draDeviceSelector is the DeviceClass's CEL selector: every device of the driver.
var draDeviceSelector = strconv.Quote(localnode.DRADriver)

// ensureDeviceClass writes the DeviceClass of the nodes' simulated GPUs.
func ensureDeviceClass(ctx context.Context, c client.Client) error {
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: localnode.DRADriver}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, class, func() error {
		class.Spec.Selectors = []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: "device.driver == " + draDeviceSelector},
		}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing DeviceClass %s: %w", class.Name, err)
	}
	return nil
}

// draDevicesPublished wants the node's DRA driver to have published its devices: it
// registers with the kubelet and writes its ResourceSlice after the node is Ready, and
// a claim made at once would otherwise find no device.
func draDevicesPublished(ctx context.Context, c client.Client, node string, want int) error {
	if want == 0 {
		return nil
	}
	// The API server selects the node's slices of the driver: each poll of each node
	// reads its own, not every node's.
	var slices resourcev1.ResourceSliceList
	err := c.List(ctx, &slices, client.MatchingFields{
		resourcev1.ResourceSliceSelectorNodeName: node,
		resourcev1.ResourceSliceSelectorDriver:   localnode.DRADriver,
	})
	if err != nil {
		return err
	}
	if got := nodeDRADevices(slices.Items, node); got != want {
		return fmt.Errorf("%d devices of driver %s published, want %d", got, localnode.DRADriver, want)
	}
	return nil
}

// nodeDRADevices counts the devices of the nodes' DRA driver that slices publish
// on node.
func nodeDRADevices(slices []resourcev1.ResourceSlice, node string) int {
	n := 0
	for _, s := range slices {
		if s.Spec.Driver == localnode.DRADriver && s.Spec.NodeName != nil && *s.Spec.NodeName == node {
			n += len(s.Spec.Devices)
		}
	}
	return n
}

// checkDRADriverBinary wants the DRA driver in binDir when the nodes run it.
func checkDRADriverBinary(binDir string, gpus int) error {
	if gpus == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(binDir, localnode.DRADriverBinary)); err != nil {
		return fmt.Errorf("--dra-gpus %d: %s missing from %s (run make node-tools)", gpus, localnode.DRADriverBinary, binDir)
	}
	return nil
}
