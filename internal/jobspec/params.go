// Package jobspec turns a job's parameters into a TFJob: one definition behind
// tfk8s submit's flags, the dashboard's form and the Python SDK, so that the same
// parameters give the same job from each. Every refusal names the parameter as the
// flag spells it (--workers -1: must not be negative).
package jobspec

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// Params are a job's parameters as tfk8s submit's flags give them; each JSON key is
// the flag's name, so that a front end (the dashboard's form, the SDK) sends what a
// user types. A parameter left out (nil, "", empty) leaves the manifest's value, or,
// without a manifest, the default.
type Params struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Image     string `json:"image,omitempty"`
	// Command is the command of every replica: submit's arguments after --.
	Command   []string `json:"command,omitempty"`
	PS        *int32   `json:"ps,omitempty"`
	Workers   *int32   `json:"workers,omitempty"`
	Chief     *bool    `json:"chief,omitempty"`
	Evaluator *bool    `json:"evaluator,omitempty"`
	GPUs      *int64   `json:"gpus,omitempty"`
	GPUType   string   `json:"gpu-type,omitempty"`
	// DeviceClass and DeviceSelectors ask for the GPUs by a DRA claim.
	DeviceClass     string   `json:"device-class,omitempty"`
	DeviceSelectors []string `json:"device-selector,omitempty"`
	SpreadPS        bool     `json:"spread-ps,omitempty"`
	Queue           string   `json:"queue,omitempty"`
	CPU             string   `json:"cpu,omitempty"`
	Memory          string   `json:"memory,omitempty"`
	// Data is an s3:// prefix; a local directory is the front end's to upload.
	Data                     string           `json:"data,omitempty"`
	Artifacts                []string         `json:"artifacts,omitempty"`
	ArtifactsInterval        *metav1.Duration `json:"artifacts-interval,omitempty"`
	Env                      []string         `json:"env,omitempty"`
	TensorBoard              *bool            `json:"tensorboard,omitempty"`
	Volumes                  []string         `json:"volume,omitempty"`
	ResumeFrom               string           `json:"resume-from,omitempty"`
	RestartPolicy            *string          `json:"restart-policy,omitempty"`
	BackoffLimit             *int32           `json:"backoff-limit,omitempty"`
	ActiveDeadline           *metav1.Duration `json:"active-deadline,omitempty"`
	TTLAfterFinished         *metav1.Duration `json:"ttl-after-finished,omitempty"`
	CleanPodPolicy           *string          `json:"clean-pod-policy,omitempty"`
	ExposeStorageCredentials *bool            `json:"expose-storage-credentials,omitempty"`
}

// Defaults of a job built without a manifest.
const (
	DefaultWorkers           int32 = 1
	DefaultBackoffLimit      int32 = 6
	DefaultRestartPolicy           = tfv1.RestartPolicyExitCode
	DefaultCleanPodPolicy          = tfv1.CleanPodPolicyRunning
	DefaultArtifactsInterval       = 60 * time.Second
	// DefaultDataPath is where --data appears in every container.
	DefaultDataPath = "/data"
)

// New builds the job of p over base (a manifest; nil for none), as tfk8s render does
// for a job that ships no local files.
func New(base *tfv1.TFJob, p Params) (*tfv1.TFJob, error) {
	v, err := p.Check(base != nil)
	if err != nil {
		return nil, err
	}
	return Build(base, v)
}
