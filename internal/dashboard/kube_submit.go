package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Submit builds the job as tfk8s submit does (its flags, checked the same way, over
// the manifest if any) in the request's namespace, and creates it, or has the API
// server only validate it.
func (d *kubeCluster) Submit(ctx context.Context, req SubmitRequest) (*Submitted, error) {
	job, err := FormJob(req)
	if err != nil {
		return nil, err
	}
	var opts []client.CreateOption
	if req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	jobs.StampCreator(ctx, d.client, job)
	if err := d.client.Create(ctx, job, opts...); err != nil {
		return nil, fmt.Errorf("creating tfjob %s: %w", job.Name, err)
	}
	y, err := jobspec.YAML(job)
	if err != nil {
		return nil, err
	}
	done := &Submitted{Namespace: job.Namespace, Name: job.Name, YAML: string(y)}
	if !req.DryRun {
		if err := d.recordRun(ctx, job); err != nil {
			done.Warning = err.Error()
		}
	}
	return done, nil
}

// recordRun writes the run record of a job just created, as tfk8s submit does, with
// the dashboard's S3 settings or the job's Secret read with the user's rights.
func (d *kubeCluster) recordRun(ctx context.Context, job *tfv1.TFJob) error {
	if job.Spec.Artifacts == nil {
		return nil
	}
	c, _, err := d.storage.ForJob(ctx, d.in(job.Namespace), job)
	if err != nil {
		return fmt.Errorf("writing the run record of tfjob %s: %w", job.Name, err)
	}
	return jobs.RecordRun(ctx, c, job, time.Now())
}

// FormJob is the job of a request of the submit page: it reads the form (or the YAML, with the form's fields over it) into the
// job's parameters and builds the job of them, as render does.
func FormJob(req SubmitRequest) (*tfv1.TFJob, error) {
	p, err := jobspec.FromForm(req.Flags, req.Command)
	if err != nil {
		return nil, err
	}
	var base *tfv1.TFJob
	if strings.TrimSpace(req.YAML) != "" {
		if base, err = jobspec.Decode([]byte(req.YAML)); err != nil {
			return nil, fmt.Errorf("reading the YAML: %w", err)
		}
	}
	v, err := p.Check(base != nil)
	if err != nil {
		return nil, err
	}
	v.Namespace = req.Namespace
	return jobspec.Build(base, v)
}

// Clone reads a past job as a new one to edit: its manifest, without the status
// and the fields the API server sets, not suspended, named <name>-2 (or -3, ...);
// and the form's flags for what they can say of it.
func (d *kubeCluster) Clone(ctx context.Context, namespace, name string) (*SubmitRequest, error) {
	old, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	job := jobspec.NewTFJob()
	job.Name, job.Namespace, job.Labels, job.Annotations = cloneName(name), namespace, old.Labels, old.Annotations
	job.Spec = *old.Spec.DeepCopy()
	job.Spec.RunPolicy.Suspend = nil
	y, err := jobspec.YAML(job)
	if err != nil {
		return nil, err
	}
	return &SubmitRequest{Namespace: namespace, YAML: string(y), Flags: cloneFlags(job), Command: cloneCommand(job)}, nil
}

// cloneName is name with its clone number raised: mnist → mnist-2 → mnist-3.
func cloneName(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil && n >= 2 {
			return name[:i+1] + strconv.Itoa(n+1)
		}
	}
	return name + "-2"
}

// cloneFlags are the form's fields for job, as far as submit's flags can say it:
// the first replica type's container stands for every replica, as the flags set
// them all alike. A job with code, data, artifacts, storage or volumes has none:
// the form would drop them, and only its YAML is a clone of it.
func cloneFlags(job *tfv1.TFJob) map[string]string {
	if s := job.Spec; s.Code != nil || len(s.Data) > 0 || s.Artifacts != nil || s.Storage != nil || len(s.Volumes) > 0 {
		return nil
	}
	f := map[string]string{"name": job.Name}
	specs := job.Spec.TFReplicaSpecs
	for _, rt := range []tfv1.ReplicaType{tfv1.ReplicaTypePS, tfv1.ReplicaTypeWorker} {
		key := map[tfv1.ReplicaType]string{tfv1.ReplicaTypePS: "ps", tfv1.ReplicaTypeWorker: "workers"}[rt]
		f[key] = strconv.Itoa(int(tfjob.Replicas(specs[rt])))
	}
	for rt, key := range map[tfv1.ReplicaType]string{tfv1.ReplicaTypeChief: "chief", tfv1.ReplicaTypeEvaluator: "evaluator"} {
		if specs[rt] != nil {
			f[key] = "true"
		}
	}
	if c, rt := firstContainer(job); c != nil {
		f["image"] = c.Image
		if rp := specs[rt].RestartPolicy; rp != "" {
			f["restart-policy"] = string(rp)
		}
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			f["cpu"] = q.String()
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			f["memory"] = q.String()
		}
		if q, ok := c.Resources.Limits[tfjob.GPUResource]; ok {
			f["gpus"] = q.String()
		}
		var env []string
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env = append(env, e.Name+"="+e.Value)
			}
		}
		f["env"] = strings.Join(env, "\n")
	}
	rp := job.Spec.RunPolicy
	if rp.BackoffLimit != nil {
		f["backoff-limit"] = strconv.Itoa(int(*rp.BackoffLimit))
	}
	if rp.ActiveDeadlineSeconds != nil {
		f["active-deadline"] = (time.Duration(*rp.ActiveDeadlineSeconds) * time.Second).String()
	}
	if rp.TTLSecondsAfterFinished != nil {
		f["ttl-after-finished"] = (time.Duration(*rp.TTLSecondsAfterFinished) * time.Second).String()
	}
	if rp.CleanPodPolicy != nil {
		f["clean-pod-policy"] = string(*rp.CleanPodPolicy)
	}
	if tb := job.Spec.TensorBoard; tb != nil && tb.Enabled {
		f["tensorboard"] = "true"
	}
	return f
}

// firstContainer is the main container of the job's first replica type (the
// chief's, else a worker's, ...), and that type.
func firstContainer(job *tfv1.TFJob) (*corev1.Container, tfv1.ReplicaType) {
	for _, rt := range []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeMaster, tfv1.ReplicaTypeWorker, tfv1.ReplicaTypePS, tfv1.ReplicaTypeEvaluator} {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil {
			return tfjob.TensorFlowContainer(spec.Template.Spec.Containers), rt
		}
	}
	return nil, ""
}

// cloneCommand is the command and arguments of the job's first container, joined
// with spaces as the form splits them.
func cloneCommand(job *tfv1.TFJob) string {
	c, _ := firstContainer(job)
	if c == nil {
		return ""
	}
	return strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
}
