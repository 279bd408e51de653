package build

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// PodOptions are the cluster-wide settings pods are built with.
type PodOptions struct {
	AddressOptions
	// Agent, when the job sets code, data or artifacts, wraps the command in the agent.
	Agent AgentOptions
	// TensorBoardImage runs the jobs' TensorBoards that name no image of their own;
	// DefaultTensorBoardImage when empty.
	TensorBoardImage string
	// Gang is how pods join their job's gang scheduling group.
	Gang GangOptions
	// CompactTFConfigAbove is the size of TF_CONFIG beyond which the pods of a job run
	// by the agent carry the cluster (tfconfig.EnvCluster) for the agent to compose
	// TF_CONFIG from; 0 makes every pod of a job with more than one replica carry it.
	// DefaultCompactTFConfigAbove when nil.
	CompactTFConfigAbove *int

	// TFConfigs, when set, is the job's TF_CONFIG builder, shared by its pods so that
	// the cluster is encoded once a job; built from the options above when nil.
	TFConfigs *TFConfigs
}

// Pod builds the pod of one replica: the replica type's template with the job's
// labels, owner reference, tracking finalizer, stable hostname and TF_CONFIG.
func Pod(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts PodOptions) (*corev1.Pod, error) {
	spec := job.Spec.TFReplicaSpecs[rt]
	tmpl := spec.Template.DeepCopy()
	name := tfjob.PodName(job.Name, rt, index)

	// Reserved keys are left out (noteIgnoredFields says so on the job): the
	// controller's own labels select Services and forwards.
	labels, _ := WithoutReserved(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	annotations, _ := WithoutReserved(tmpl.Annotations)
	for k, v := range ReplicaLabels(job.Name, rt) {
		labels[k] = v
	}
	labels[tfv1.LabelReplicaIndex] = strconv.Itoa(int(index))
	if kubeflow.IsKubeflow(job) {
		maps.Copy(labels, kubeflow.PodLabels(job, rt, index))
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       job.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			Finalizers:      []string{tfv1.TrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
		},
		Spec: tmpl.Spec,
	}
	pod.Spec.Hostname = name
	pod.Spec.Subdomain = job.Name
	pod.Spec.RestartPolicy = podRestartPolicy(spec.RestartPolicy)
	if !Adopted(job) {
		bindToGang(pod, job, GangProvider(job, opts.Gang.DefaultProvider), opts.Gang)
	}
	packGPUReplicas(job, &pod.Spec)
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.PriorityClass != "" && pod.Spec.PriorityClassName == "" {
		pod.Spec.PriorityClassName = sp.PriorityClass
	}

	c := tfjob.TensorFlowContainer(pod.Spec.Containers)
	if c == nil {
		return nil, fmt.Errorf("replica type %s has no container", rt)
	}
	if job.Spec.Networking.Mode == tfv1.NetworkingModeHostNetwork {
		port, ok := opts.HostPorts[ReplicaKey{rt, index}]
		if !ok {
			return nil, fmt.Errorf("no host port allocated for %s", name)
		}
		pod.Spec.HostNetwork = true
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		setHostPort(c, port)
	}
	tfConfigs := opts.TFConfigs
	if tfConfigs == nil {
		tfConfigs = opts.NewTFConfigs(job)
	}
	tfConfig, ok, err := tfConfigs.Env(rt, index, tfjob.UsesStorage(job))
	if err != nil {
		return nil, err
	}
	if ok {
		setTFConfigEnv(c, tfConfig)
	}
	addJobVolumes(job, &pod.Spec)
	addDeviceClaim(job, rt, &pod.Spec, c)
	if tfjob.UsesStorage(job) {
		injectAgent(job, pod, c, rt, index, opts.Agent)
	}
	return pod, nil
}

// ReplicaLabels are the labels selecting the pods of one replica type of a job.
func ReplicaLabels(job string, rt tfv1.ReplicaType) map[string]string {
	return map[string]string{
		tfv1.LabelJobName:     job,
		tfv1.LabelReplicaType: tfjob.TaskType(rt),
	}
}

// podRestartPolicy is the pod restart policy that carries out a replica restart policy:
// the kubelet restarts containers for Always and OnFailure; under ExitCode, tfk8s
// re-creates the pod itself, so the kubelet must not.
func podRestartPolicy(p tfv1.RestartPolicy) corev1.RestartPolicy {
	switch p {
	case tfv1.RestartPolicyAlways:
		return corev1.RestartPolicyAlways
	case tfv1.RestartPolicyOnFailure:
		return corev1.RestartPolicyOnFailure
	default:
		return corev1.RestartPolicyNever
	}
}

// setHostPort makes c listen on port in the node's network: its tfjob-port becomes port
// on both sides, so the scheduler never puts two pods using it on one node.
func setHostPort(c *corev1.Container, port int32) {
	p := corev1.ContainerPort{Name: tfjob.PortName, ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}
	for i := range c.Ports {
		if c.Ports[i].Name == tfjob.PortName {
			c.Ports[i] = p
			return
		}
	}
	c.Ports = append(c.Ports, p)
}
