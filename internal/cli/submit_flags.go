package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// submitFlags are submit's (and render's) flags as given.
type submitFlags struct {
	name, image     string
	ps, workers     int32
	chief           bool
	evaluator       bool
	gpus            int64
	gpuType         string
	spreadPS        bool
	queue           string
	cpu, memory     string
	data            string
	artifacts       []string
	env             []string
	file            string
	wait, follow    bool
	dryRun          bool
	output          string
	clusterEndpoint string
	storageSecret   string
	policy          policyFlags
	resumeFrom      string
	tensorboard     bool
	artifactsEvery  time.Duration
	volumes         []string
}

func (f *submitFlags) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "name of the job (required unless -f gives one)")
	fs.StringVar(&f.image, "image", "", "container image of every replica (required unless -f gives one)")
	fs.Int32Var(&f.ps, "ps", 0, "number of parameter servers")
	fs.Int32Var(&f.workers, "workers", 1, "number of workers")
	fs.BoolVar(&f.chief, "chief", false, "add a chief")
	fs.BoolVar(&f.evaluator, "evaluator", false, "add an evaluator")
	fs.Int64Var(&f.gpus, "gpus", 0, "GPUs (nvidia.com/gpu) of every replica but the parameter servers")
	fs.StringVar(&f.gpuType, "gpu-type", "", "GPU model the replicas with GPUs need: a node selector on the label nvidia.com/gpu.product that NVIDIA's GPU feature discovery sets, e.g. NVIDIA-A100-SXM4-80GB")
	fs.BoolVar(&f.spreadPS, "spread-ps", false, "ask the scheduler to put the parameter servers on different nodes where it can")
	fs.StringVar(&f.queue, "queue", "", "Kueue LocalQueue of the job: sets Kueue's label kueue.x-k8s.io/queue-name, and the job runs once Kueue admits it (not runPolicy.schedulingPolicy.queue, a Volcano queue, which -f sets)")
	fs.StringVar(&f.cpu, "cpu", "", "CPU request and limit of every replica, e.g. 2 or 500m")
	fs.StringVar(&f.memory, "memory", "", "memory request and limit of every replica, e.g. 4Gi")
	fs.StringVar(&f.data, "data", "", "data set: a local directory (uploaded, content-addressed) or an s3:// prefix, copied to "+defaultDataPath)
	fs.StringArrayVar(&f.artifacts, "artifacts", nil, "path backed up to S3 while the job runs (relative paths are under "+tfjob.DefaultCodePath+"); repeatable")
	fs.StringArrayVar(&f.env, "env", nil, "environment variable NAME=VALUE of every replica; repeatable")
	fs.StringVarP(&f.file, "filename", "f", "", "TFJob manifest (tfk8s.io/v1alpha1, or kubeflow.org/v1 converted) the flags apply over; - for stdin")
	fs.BoolVar(&f.wait, "wait", false, "wait until the job succeeds or fails (exit code 1 if it fails)")
	fs.BoolVar(&f.follow, "follow", false, "print the job's logs until it finishes, then wait as --wait")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the job instead of creating it: nothing is uploaded or created")
	fs.StringVarP(&f.output, "output", "o", "", "print the job as yaml or json (default with --dry-run: yaml)")
	fs.StringVar(&f.clusterEndpoint, "s3-cluster-endpoint", "", "S3 endpoint as pods reach it, when not at --s3-endpoint")
	fs.StringVar(&f.storageSecret, "storage-secret", "", "existing Secret of the job's namespace that its pods read the S3 settings from (keys "+
		tfjob.SecretKeyEndpoint+", "+tfjob.SecretKeyAccessKeyID+", "+tfjob.SecretKeySecretAccessKey+", optionally "+tfjob.SecretKeyRegion+" and "+tfjob.SecretKeyInsecure+
		"), instead of a Secret submit makes for the job from the local S3 settings (default $"+jobs.EnvStorageSecret+", which a notebook sets to its own)")
	fs.DurationVar(&f.artifactsEvery, "artifacts-interval", 60*time.Second, "time between two uploads of the --artifacts paths while the job runs (0s: only when each replica stops)")
	fs.BoolVar(&f.tensorboard, "tensorboard", false, "run a TensorBoard beside the job, reading the summaries under its --artifacts paths (or its volume named logs); open it with `tfk8s tensorboard JOB`")
	fs.StringArrayVar(&f.volumes, "volume", nil, volumeFlagHelp)
	fs.StringVar(&f.resumeFrom, "resume-from", "", "earlier job (of the namespace) whose stored --artifacts paths every replica starts from")
	f.policy.addFlags(fs)
}

// submitArgs are the positional arguments: DIR before "--", the command after.
type submitArgs struct {
	dir     string
	command []string
}

// parseArgs splits the arguments at "--".
func parseArgs(cmd *cobra.Command, args []string) (submitArgs, error) {
	positional, command := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		positional, command = args[:dash], args[dash:]
	}
	switch len(positional) {
	case 0:
		return submitArgs{command: command}, nil
	case 1:
		return submitArgs{dir: positional[0], command: command}, nil
	}
	return submitArgs{}, fmt.Errorf("want at most one DIR, got %q: put the command after --, as in: tfk8s submit DIR --name N --image I -- python3 train.py", positional)
}

// params turns the flags into jobParams, checking each; flags not given stay unset,
// so that a manifest's values stand.
func (f *submitFlags) params(cmd *cobra.Command, command []string) (jobParams, error) {
	changed := cmd.Flags().Changed
	p := jobParams{Name: f.name, Image: f.image, Command: command}
	if f.name != "" {
		if errs := validation.IsDNS1035Label(f.name); len(errs) > 0 {
			return p, fmt.Errorf("--name %q: %s", f.name, strings.Join(errs, "; "))
		}
	}
	if changed("ps") {
		if f.ps < 0 {
			return p, fmt.Errorf("--ps %d: must not be negative", f.ps)
		}
		p.PS = &f.ps
	}
	if changed("workers") || f.file == "" {
		if f.workers < 0 {
			return p, fmt.Errorf("--workers %d: must not be negative", f.workers)
		}
		p.Workers = &f.workers
	}
	if changed("chief") {
		p.Chief = &f.chief
	}
	if changed("evaluator") {
		p.Evaluator = &f.evaluator
	}
	if f.file == "" && *p.Workers == 0 && !f.chief {
		return p, fmt.Errorf("--workers 0 needs --chief: a job needs a chief or at least one worker")
	}
	if err := f.gpuParams(&p, changed); err != nil {
		return p, err
	}
	if p.Queue = f.queue; f.queue != "" {
		if errs := validation.IsValidLabelValue(f.queue); len(errs) > 0 {
			return p, fmt.Errorf("--queue %q: not a label value: %s", f.queue, strings.Join(errs, "; "))
		}
	}
	var err error
	if p.CPU, err = jobspec.ParseQuantity("--cpu", f.cpu); err != nil {
		return p, err
	}
	if p.Memory, err = jobspec.ParseQuantity("--memory", f.memory); err != nil {
		return p, err
	}
	for _, kv := range f.env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return p, fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
		if errs := validation.IsEnvVarName(name); len(errs) > 0 {
			return p, fmt.Errorf("--env %q: %s", kv, strings.Join(errs, "; "))
		}
		p.Env = append(p.Env, corev1.EnvVar{Name: name, Value: value})
	}
	if strings.HasPrefix(f.data, "s3://") {
		u, err := storage.ParseURI(f.data)
		if err != nil {
			return p, fmt.Errorf("--data: %w", err)
		}
		p.Data = []tfv1.DataSource{{Source: u.Dir().String(), Path: defaultDataPath}}
	}
	p.ArtifactPaths = f.artifacts
	for _, a := range f.artifacts {
		if a == "" {
			return p, fmt.Errorf("--artifacts: empty path")
		}
	}
	if p.Volumes, err = parseVolumes(f.volumes); err != nil {
		return p, err
	}
	if changed("artifacts-interval") {
		if f.artifactsEvery < 0 {
			return p, fmt.Errorf("--artifacts-interval %v: must not be negative", f.artifactsEvery)
		}
		p.ArtifactsInterval = &f.artifactsEvery
	}
	if changed("tensorboard") {
		p.TensorBoard = &f.tensorboard
	}
	if f.resumeFrom != "" {
		if errs := validation.IsDNS1035Label(f.resumeFrom); len(errs) > 0 {
			return p, fmt.Errorf("--resume-from %q: want the name of an earlier job: %s", f.resumeFrom, strings.Join(errs, "; "))
		}
		p.ResumeFrom = f.resumeFrom
	}
	return p, f.policy.apply(&p, changed, f.file == "")
}

// gpuParams sets the GPUs and the placement flags: --gpus, --gpu-type, --spread-ps.
func (f *submitFlags) gpuParams(p *jobParams, changed func(string) bool) error {
	if changed("gpus") {
		if f.gpus < 0 {
			return fmt.Errorf("--gpus %d: must not be negative", f.gpus)
		}
		p.GPUs = &f.gpus
	}
	if f.gpuType != "" {
		if errs := validation.IsValidLabelValue(f.gpuType); len(errs) > 0 {
			return fmt.Errorf("--gpu-type %q: not a node label value: %s", f.gpuType, strings.Join(errs, "; "))
		}
	}
	p.GPUType, p.SpreadPS = f.gpuType, f.spreadPS
	return nil
}
