package jobspec

import (
	"strconv"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// fields are the parameters of a job: the dashboard's form shows those with a Form,
// in this order.
var fields = []Field{
	{Flag: "name", Name: "Name", Help: "name of the job (required unless -f gives one)",
		Form: &Form{Required: true}, param: func(p *Params) any { return &p.Name }},
	{Flag: "image", Name: "Image", Help: "container image of every replica (required unless -f gives one)",
		Form: &Form{Required: true, Size: 40}, param: func(p *Params) any { return &p.Image }},
	{Flag: "command", Name: "Command, split at spaces", Kind: KindArgs, Help: "command of every replica: submit's arguments after --",
		Form: &Form{Wide: true, Size: 60, Placeholder: "python3 train.py --epochs 3"}, param: func(p *Params) any { return &p.Command }},
	{Flag: "ps", Name: "Parameter servers", Kind: KindInt, Help: "number of parameter servers", Default: "0",
		Form: &Form{}, param: func(p *Params) any { return &p.PS }},
	{Flag: "workers", Name: "Workers", Kind: KindInt, Help: "number of workers", Default: strconv.Itoa(int(DefaultWorkers)),
		Form: &Form{}, param: func(p *Params) any { return &p.Workers }},
	{Flag: "chief", Name: "Chief", Kind: KindBool, Help: "add a chief",
		Form: &Form{}, param: func(p *Params) any { return &p.Chief }},
	{Flag: "evaluator", Name: "Evaluator", Kind: KindBool, Help: "add an evaluator",
		Form: &Form{}, param: func(p *Params) any { return &p.Evaluator }},
	{Flag: "gpus", Name: "GPUs per replica", Kind: KindInt, Help: gpuHelp, Default: "0",
		Form: &Form{}, param: func(p *Params) any { return &p.GPUs }},
	{Flag: "cpu", Name: "CPU", Help: "CPU request and limit of every replica, e.g. 2 or 500m",
		Form: &Form{Placeholder: "2 or 500m"}, param: func(p *Params) any { return &p.CPU }},
	{Flag: "memory", Name: "Memory", Help: "memory request and limit of every replica, e.g. 4Gi",
		Form: &Form{Placeholder: "4Gi"}, param: func(p *Params) any { return &p.Memory }},
	{Flag: "restart-policy", Name: "Restart policy", Kind: KindChoice, Default: string(DefaultRestartPolicy),
		Help: "what a replica's failure does: " + enumNames(restartPolicies) +
			" (ExitCode: re-create the pod after a retryable exit code, 128 and above; fail on 1-127)",
		Form: &Form{Choices: enumChoices(restartPolicies, DefaultRestartPolicy)}, param: func(p *Params) any { return &p.RestartPolicy }},
	{Flag: "backoff-limit", Name: "Backoff limit", Kind: KindInt, Default: strconv.Itoa(int(DefaultBackoffLimit)),
		Help: "restarts of the job's replicas, in all, before the job fails",
		Form: &Form{Placeholder: strconv.Itoa(int(DefaultBackoffLimit))}, param: func(p *Params) any { return &p.BackoffLimit }},
	{Flag: "active-deadline", Name: "Fail after running", Kind: KindDuration,
		Help: "fail the job once it has run this long, e.g. 2h (whole seconds)",
		Form: &Form{Placeholder: "12h"}, param: func(p *Params) any { return &p.ActiveDeadline }},
	{Flag: "ttl-after-finished", Name: "Delete after finished", Kind: KindDuration,
		Help: "delete the job this long after it finished, e.g. 24h (whole seconds; 0s: at once)",
		Form: &Form{Placeholder: "24h"}, param: func(p *Params) any { return &p.TTLAfterFinished }},
	{Flag: "clean-pod-policy", Name: "Pods deleted when finished", Kind: KindChoice, Default: string(DefaultCleanPodPolicy),
		Help: "pods deleted once the job finished: " + enumNames(cleanPodPolicies),
		Form: &Form{Choices: enumChoices(cleanPodPolicies, DefaultCleanPodPolicy)}, param: func(p *Params) any { return &p.CleanPodPolicy }},
	{Flag: "tensorboard", Name: "TensorBoard", Kind: KindBool,
		Help: "run a TensorBoard beside the job, reading the summaries under its --artifacts paths (or its volume named logs); open it with `tfk8s tensorboard JOB`",
		Form: &Form{}, param: func(p *Params) any { return &p.TensorBoard }},
	{Flag: "resume-from", Name: "Resume from job", Help: "earlier job (of the namespace) whose stored --artifacts paths every replica starts from",
		Form: &Form{Placeholder: "mnist"}, param: func(p *Params) any { return &p.ResumeFrom }},
	{Flag: "env", Name: "Environment", Kind: KindList, Help: "environment variable NAME=VALUE of every replica; repeatable",
		Form: &Form{Wide: true, Rows: 3, Hint: "NAME=VALUE a line"}, param: func(p *Params) any { return &p.Env }},
	{Flag: "volume", Name: "Volumes", Kind: KindList, Help: volumeFlagHelp,
		Form: &Form{Wide: true, Rows: 2, Hint: "one a line, e.g. name=logs,mount=/logs,size=1Gi"}, param: func(p *Params) any { return &p.Volumes }},

	// Parameters the form leaves out: they read the user's files or S3 settings, or
	// place the job where the form's user may not decide.
	{Flag: "gpu-type", Help: "GPU model the replicas with GPUs need: a node selector on the label " + gpuProductLabel +
		" that NVIDIA's GPU feature discovery sets, e.g. NVIDIA-A100-SXM4-80GB", param: func(p *Params) any { return &p.GPUType }},
	{Flag: "spread-ps", Kind: KindBool, Help: "ask the scheduler to put the parameter servers on different nodes where it can",
		param: func(p *Params) any { return &p.SpreadPS }},
	{Flag: "queue", Help: "Kueue LocalQueue of the job: sets Kueue's label kueue.x-k8s.io/queue-name, and the job runs once Kueue admits it (not runPolicy.schedulingPolicy.queue, a Volcano queue, which -f sets)",
		param: func(p *Params) any { return &p.Queue }},
	{Flag: "data", Help: "data set: a local directory (uploaded, content-addressed) or an s3:// prefix, copied to " + DefaultDataPath,
		param: func(p *Params) any { return &p.Data }},
	{Flag: "artifacts", Kind: KindList, Help: "path backed up to S3 while the job runs (relative paths are under " + tfjob.DefaultCodePath + "); repeatable",
		param: func(p *Params) any { return &p.Artifacts }},
	{Flag: "artifacts-interval", Kind: KindDuration, Default: DefaultArtifactsInterval.String(),
		Help:  "time between two uploads of the --artifacts paths while the job runs (0s: only when each replica stops)",
		param: func(p *Params) any { return &p.ArtifactsInterval }},
	{Flag: "expose-storage-credentials", Kind: KindBool,
		Help:  "pass the S3 settings and credentials (AWS_*) on to the command; by default only the tfk8s agent sees them",
		param: func(p *Params) any { return &p.ExposeStorageCredentials }},
}
