package jobspec

import (
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Labels and weights of the jobs Build makes.
const (
	// gpuProductLabel is the node label NVIDIA's GPU feature discovery sets to the
	// model of the node's GPUs (e.g. NVIDIA-A100-SXM4-80GB); --gpu-type selects on it.
	gpuProductLabel = "nvidia.com/gpu.product"
	// spreadWeight is the weight of --spread-ps's preferred anti-affinity.
	spreadWeight = 100
)

// Values are Params checked and typed, and what a front end adds of its own (the
// code it uploaded, the S3 destination and Secret); a nil or empty field leaves the
// job (from a manifest, or the defaults) as it is.
type Values struct {
	Name      string
	Namespace string
	Image     string
	// Command replaces the tensorflow container's command and arguments.
	Command []string
	// PS and Workers are replica counts; Chief and Evaluator add or remove one.
	PS, Workers      *int32
	Chief, Evaluator *bool
	// GPUs are limits of every replica but the parameter servers.
	GPUs *int64
	// GPUResource, when set, is the extended resource GPUs counts, instead of
	// nvidia.com/gpu: a MIG profile or a time-sliced GPU.
	GPUResource corev1.ResourceName
	// GPUType, when set, is the GPU model (the node label nvidia.com/gpu.product) the
	// replicas that ask for GPUs need.
	GPUType string
	// DeviceClass, when set, asks for the GPUs by a claim on this DeviceClass, each
	// device satisfying every one of DeviceSelectors.
	DeviceClass     string
	DeviceSelectors []string
	// SpreadPS, when true, asks the scheduler to put the parameter servers on
	// different nodes where it can.
	SpreadPS bool
	// Queue, when set, is the Kueue LocalQueue the job waits in to be admitted.
	Queue string
	// CPU and Memory are requests and limits of every replica.
	CPU, Memory *resource.Quantity
	Env         []corev1.EnvVar
	Code        *tfv1.Code
	Data        []tfv1.DataSource
	// ArtifactPaths are absolute, or relative to the code path.
	ArtifactPaths []string
	// ArtifactsDestination, when set, backs up artifacts and logs under it.
	ArtifactsDestination string
	// ArtifactsInterval is the time between two uploads while the command runs.
	ArtifactsInterval *time.Duration
	// SecretName names the storage Secret.
	SecretName string
	// ExposeCredentials passes the storage credentials on to the user's command.
	ExposeCredentials *bool
	// ResumeFrom names an earlier job whose stored artifacts the replicas start from.
	ResumeFrom string
	// RestartPolicy applies to every replica type.
	RestartPolicy *tfv1.RestartPolicy
	// The run policy's fields, each left as it is when nil.
	BackoffLimit            *int32
	ActiveDeadlineSeconds   *int64
	TTLSecondsAfterFinished *int32
	CleanPodPolicy          *tfv1.CleanPodPolicy
	// Volumes replace the manifest's volumes of the same names, or are added.
	Volumes []tfv1.JobVolume
	// TensorBoard turns the job's TensorBoard on or off.
	TensorBoard *bool
}

// NewTFJob is an empty TFJob, with the apiVersion and kind a manifest needs.
func NewTFJob() *tfv1.TFJob {
	return &tfv1.TFJob{
		TypeMeta: metav1.TypeMeta{APIVersion: tfv1.GroupVersion.String(), Kind: "TFJob"},
		Spec:     tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{}},
	}
}

// Build returns the TFJob to submit: base (from -f; nil for none) with p applied
// over it. Without a base, the job has one worker unless p says otherwise.
func Build(base *tfv1.TFJob, p Values) (*tfv1.TFJob, error) {
	job := NewTFJob()
	if base != nil {
		job = base.DeepCopy()
		job.TypeMeta = NewTFJob().TypeMeta
		if job.Spec.TFReplicaSpecs == nil {
			job.Spec.TFReplicaSpecs = map[tfv1.ReplicaType]*tfv1.ReplicaSpec{}
		}
	} else if p.Workers == nil {
		p.Workers = ptr.To[int32](1)
	}
	if p.Name != "" {
		job.Name = p.Name
	}
	if p.Namespace != "" {
		job.Namespace = p.Namespace
	}
	if job.Name == "" {
		return nil, errors.New("--name is required: the job has no name")
	}

	setReplicas(job, tfv1.ReplicaTypeChief, boolCount(p.Chief))
	setReplicas(job, tfv1.ReplicaTypePS, p.PS)
	setReplicas(job, tfv1.ReplicaTypeWorker, p.Workers)
	setReplicas(job, tfv1.ReplicaTypeEvaluator, boolCount(p.Evaluator))
	specs := job.Spec.TFReplicaSpecs
	if specs[tfv1.ReplicaTypeChief] == nil && specs[tfv1.ReplicaTypeMaster] == nil && specs[tfv1.ReplicaTypeWorker] == nil {
		return nil, errors.New("the job has no chief and no worker: set --workers to 1 or more, or add --chief")
	}

	if err := applyReplicas(job, p); err != nil {
		return nil, err
	}
	defaultImages(job, p)
	for _, rt := range tfv1.ReplicaTypes {
		if spec := specs[rt]; spec != nil && mainContainer(&spec.Template.Spec).Image == "" {
			return nil, fmt.Errorf("--image is required: replica type %s has no image", rt)
		}
	}

	if p.Code != nil {
		job.Spec.Code = p.Code.DeepCopy()
	}
	mergeVolumes(job, p.Volumes)
	if p.TensorBoard != nil {
		if job.Spec.TensorBoard == nil {
			job.Spec.TensorBoard = &tfv1.TensorBoard{}
		}
		job.Spec.TensorBoard.Enabled = *p.TensorBoard
	}
	if err := applyStorage(job, p); err != nil {
		return nil, err
	}
	if p.ResumeFrom != "" {
		if err := setResumeFrom(job, p.ResumeFrom); err != nil {
			return nil, err
		}
	}
	applyRunPolicy(job, p)
	if err := applyPlacement(job, p); err != nil {
		return nil, err
	}
	if p.Queue != "" {
		metav1.SetMetaDataLabel(&job.ObjectMeta, tfv1.LabelKueueQueue, p.Queue)
	}
	if job.Spec.Code != nil || job.Spec.Artifacts != nil {
		for _, rt := range tfv1.ReplicaTypes {
			if spec := specs[rt]; spec != nil && len(mainContainer(&spec.Template.Spec).Command) == 0 {
				return nil, fmt.Errorf("a command is required after --: the tfk8s agent runs it once the code is fetched, and replica type %s has none", rt)
			}
		}
	}
	return job, nil
}

// applyStorage sets what the job keeps in S3: its data, its artifacts (where, which
// paths, how often) and the Secret of its storage.
func applyStorage(job *tfv1.TFJob, p Values) error {
	job.Spec.Data = append(job.Spec.Data, p.Data...)
	if p.ArtifactsDestination != "" || len(p.ArtifactPaths) > 0 {
		if job.Spec.Artifacts == nil {
			job.Spec.Artifacts = &tfv1.Artifacts{}
		}
		if p.ArtifactsDestination != "" {
			job.Spec.Artifacts.Destination = p.ArtifactsDestination
		}
		if p.ArtifactsInterval != nil {
			job.Spec.Artifacts.Interval = &metav1.Duration{Duration: *p.ArtifactsInterval}
		}
		if len(p.ArtifactPaths) > 0 {
			job.Spec.Artifacts.Paths = artifactPaths(job, p.ArtifactPaths)
		}
		if job.Spec.Artifacts.Destination == "" {
			return errors.New("--artifacts needs a destination: configure an S3 bucket")
		}
	}
	if p.SecretName != "" {
		job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: p.SecretName}}
	}
	if p.ExposeCredentials != nil {
		if job.Spec.Storage == nil {
			return errors.New("--expose-storage-credentials: the job uses no S3 storage")
		}
		job.Spec.Storage.ExposeCredentials = *p.ExposeCredentials
	}
	return nil
}

// boolCount turns --chief or --evaluator into a count of 0 or 1, nil when not given.
func boolCount(b *bool) *int32 {
	if b == nil {
		return nil
	}
	if *b {
		return ptr.To[int32](1)
	}
	return ptr.To[int32](0)
}

// setReplicas sets the count of replica type rt: 0 removes it, a new type copies the
// template of an existing one (a worker's, else the chief's, ...), so that a manifest's
// pod settings carry over, else starts from an empty "tensorflow" container.
func setReplicas(job *tfv1.TFJob, rt tfv1.ReplicaType, n *int32) {
	if n == nil {
		return
	}
	specs := job.Spec.TFReplicaSpecs
	if *n == 0 {
		delete(specs, rt)
		return
	}
	if spec := specs[rt]; spec != nil {
		spec.Replicas = ptr.To(*n)
		return
	}
	spec := &tfv1.ReplicaSpec{Replicas: ptr.To(*n)}
	for _, model := range []tfv1.ReplicaType{tfv1.ReplicaTypeWorker, tfv1.ReplicaTypeChief, tfv1.ReplicaTypeMaster, tfv1.ReplicaTypePS, tfv1.ReplicaTypeEvaluator} {
		if m := specs[model]; m != nil {
			spec.Template = *m.Template.DeepCopy()
			spec.RestartPolicy = m.RestartPolicy
			break
		}
	}
	if len(spec.Template.Spec.Containers) == 0 {
		spec.Template.Spec.Containers = []corev1.Container{{Name: tfjob.ContainerName}}
	}
	specs[rt] = spec
}

// mainContainer returns the container that runs the user's command (see
// findMainContainer), adding a "tensorflow" container if there is none.
func mainContainer(spec *corev1.PodSpec) *corev1.Container {
	if c := tfjob.TensorFlowContainer(spec.Containers); c != nil {
		return c
	}
	spec.Containers = append(spec.Containers, corev1.Container{Name: tfjob.ContainerName})
	return &spec.Containers[0]
}

// applyContainer sets the flags' image, command, environment and resources on the
// container of a replica of type rt.
func applyContainer(c *corev1.Container, rt tfv1.ReplicaType, p Values) {
	if p.Image != "" {
		c.Image = p.Image
	}
	if len(p.Command) > 0 {
		c.Command = append([]string(nil), p.Command...)
		c.Args = nil
	}
	for _, e := range p.Env {
		tfjob.SetEnv(c, e)
	}
	setResource(c, corev1.ResourceCPU, p.CPU, true)
	setResource(c, corev1.ResourceMemory, p.Memory, true)
	if p.GPUs != nil && rt != tfv1.ReplicaTypePS {
		setGPUs(c, p)
	}
}

// setResource sets a limit, and the request too when withRequest.
func setResource(c *corev1.Container, name corev1.ResourceName, q *resource.Quantity, withRequest bool) {
	if q == nil {
		return
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[name] = q.DeepCopy()
	if withRequest {
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		c.Resources.Requests[name] = q.DeepCopy()
	}
}

// artifactPaths makes relative artifact paths absolute, under the code path.
func artifactPaths(job *tfv1.TFJob, paths []string) []string {
	base := tfjob.DefaultCodePath
	if job.Spec.Code != nil && job.Spec.Code.Path != "" {
		base = job.Spec.Code.Path
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if path.IsAbs(p) {
			out[i] = path.Clean(p)
		} else {
			out[i] = path.Join(base, p)
		}
	}
	return out
}

// setResumeFrom points the job's artifacts at those of the earlier job of the same
// namespace stored under the same destination.
func setResumeFrom(job *tfv1.TFJob, earlier string) error {
	a := job.Spec.Artifacts
	if a == nil || len(a.Paths) == 0 {
		return fmt.Errorf("--resume-from %s needs --artifacts: the paths to restore, and to back up again", earlier)
	}
	dest, err := storage.ParseURI(a.Destination)
	if err != nil {
		return fmt.Errorf("--resume-from %s: spec.artifacts.destination: %w", earlier, err)
	}
	a.ResumeFrom = storage.JobPrefix(dest.Dir(), job.Namespace, earlier).String()
	return nil
}

// applyReplicas applies p's container and devices to every replica type.
func applyReplicas(job *tfv1.TFJob, p Values) error {
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		applyContainer(mainContainer(&spec.Template.Spec), rt, p)
		applyDevices(spec, rt, p)
	}
	return checkSelectorsApplied(job, p)
}

// applyPlacement sets where the replicas may and should run: --gpu-type as a node
// selector on every replica that asks for GPUs, and --spread-ps as a preferred
// anti-affinity among the job's parameter servers, so that losing a node loses at most
// one of them and their network traffic is shared by several nodes. (The controller
// itself packs the GPU replicas together.)
func applyPlacement(job *tfv1.TFJob, p Values) error {
	if p.GPUType != "" {
		selected := false
		for _, rt := range tfv1.ReplicaTypes {
			spec := job.Spec.TFReplicaSpecs[rt]
			if spec == nil || (!asksForGPUs(&spec.Template.Spec, p) && spec.DeviceClaim == nil) {
				continue
			}
			if spec.Template.Spec.NodeSelector == nil {
				spec.Template.Spec.NodeSelector = map[string]string{}
			}
			spec.Template.Spec.NodeSelector[gpuProductLabel] = p.GPUType
			selected = true
		}
		if !selected {
			return fmt.Errorf("--gpu-type %s: no replica asks for GPUs; add --gpus", p.GPUType)
		}
	}
	if ps := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS]; p.SpreadPS && ps != nil {
		spreadPS(job.Name, &ps.Template.Spec)
	}
	return nil
}

// spreadPS adds to a parameter server's pod a preferred anti-affinity to the job's
// other parameter servers, by node.
func spreadPS(job string, spec *corev1.PodSpec) {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.PodAntiAffinity == nil {
		spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	anti := spec.Affinity.PodAntiAffinity
	anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: spreadWeight, PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				tfv1.LabelJobName: job, tfv1.LabelReplicaType: tfjob.TaskType(tfv1.ReplicaTypePS)}},
			TopologyKey: corev1.LabelHostname,
		}})
}
