package node

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KubeletVersion is the kubelet version the node reports: that of the control plane
// tfk8s builds, whose API it serves.
const KubeletVersion = "v1.36.3"

// Reasons of the Node's conditions, the kubelet's.
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"
)

// nodeCapacity is what the node offers: the host's CPUs, memory and storage, 110 pods
// and its GPUs.
func nodeCapacity(info hostInfo, gpus int) corev1.ResourceList {
	list := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(info.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           quantity(info.MemoryBytes),
		corev1.ResourceEphemeralStorage: quantity(info.StorageBytes),
		corev1.ResourcePods:             *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI),
	}
	if gpus > 0 {
		list[GPUResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return list
}

// newNode is the Node object the node registers.
func newNode(opts Options, podCIDR string, info hostInfo, now metav1.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: opts.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:   opts.NodeName,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
			},
		},
		Spec:   corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: nodeStatus(opts, info, true, "", now, nil),
	}
}

// nodeStatus is the Node's status: capacity, addresses, the kubelet endpoint, system
// information and conditions, keeping each condition's transition time while its
// status holds.
func nodeStatus(opts Options, info hostInfo, ready bool, message string, now metav1.Time, old []corev1.NodeCondition) corev1.NodeStatus {
	capacity := nodeCapacity(info, opts.GPUs)
	readyCond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: ReasonKubeletReady, Message: "tfk8s-node is posting ready status",
	}
	if !ready {
		readyCond.Status, readyCond.Reason, readyCond.Message = corev1.ConditionFalse, ReasonKubeletNotReady, message
	}
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "tfk8s-node has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "tfk8s-node has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "tfk8s-node has sufficient PID available"},
		readyCond,
	}
	for i := range conds {
		conds[i].LastHeartbeatTime = now
		conds[i].LastTransitionTime = now
		for _, o := range old {
			if o.Type == conds[i].Type && o.Status == conds[i].Status {
				conds[i].LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return corev1.NodeStatus{
		Capacity:        capacity,
		Allocatable:     capacity.DeepCopy(),
		Phase:           corev1.NodeRunning,
		Conditions:      conds,
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: opts.NodeIP}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(opts.Port)}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               info.MachineID,
			BootID:                  info.BootID,
			KernelVersion:           info.KernelVersion,
			OSImage:                 info.OSImage,
			ContainerRuntimeVersion: info.RuntimeVersion,
			KubeletVersion:          KubeletVersion,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
		},
	}
}

// registerNode creates the Node, or takes over an existing one of the same name whose
// pod CIDR matches, and writes its status Ready.
func registerNode(ctx context.Context, client kubernetes.Interface, opts Options, podCIDR string, info hostInfo) (*corev1.Node, error) {
	node := newNode(opts, podCIDR, info, metav1.Now())
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		node = created
	} else if apierrors.IsAlreadyExists(err) {
		existing, err := client.CoreV1().Nodes().Get(ctx, opts.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", opts.NodeName, err)
		}
		if existing.Spec.PodCIDR != "" && existing.Spec.PodCIDR != podCIDR {
			return nil, fmt.Errorf("node %s exists with pod CIDR %s, not %s: delete it or use its CIDR", opts.NodeName, existing.Spec.PodCIDR, podCIDR)
		}
		for k, v := range node.Labels {
			if existing.Labels == nil {
				existing.Labels = map[string]string{}
			}
			existing.Labels[k] = v
		}
		if existing.Spec.PodCIDR == "" {
			existing.Spec.PodCIDR, existing.Spec.PodCIDRs = podCIDR, []string{podCIDR}
		}
		if node, err = client.CoreV1().Nodes().Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating node %s: %w", opts.NodeName, err)
		}
	} else {
		return nil, fmt.Errorf("creating node %s: %w", opts.NodeName, err)
	}
	return node, updateNodeStatus(ctx, client, opts, info, true, "")
}

// updateNodeStatus writes the Node's status with the given readiness, as a strategic
// merge patch of the status subresource: kube-controller-manager writes a new Node too
// (taints, CIDR), and an update from a read made before its write was refused as a
// conflict again and again on a loaded machine.
func updateNodeStatus(ctx context.Context, client kubernetes.Interface, opts Options, info hostInfo, ready bool, message string) error {
	node, err := client.CoreV1().Nodes().Get(ctx, opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %s: %w", opts.NodeName, err)
	}
	status := nodeStatus(opts, info, ready, message, metav1.Now(), node.Status.Conditions)
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encoding the status of node %s: %w", opts.NodeName, err)
	}
	if _, err := client.CoreV1().Nodes().PatchStatus(ctx, opts.NodeName, patch); err != nil {
		return fmt.Errorf("updating the status of node %s: %w", opts.NodeName, err)
	}
	return nil
}
