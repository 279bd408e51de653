package cli

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/dashboard"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// dashboardFlags are the flags of tfk8s submit the dashboard's form sets: those that
// need no local files and no S3 settings of the user's.
var dashboardFlags = []string{
	"name", "image", "ps", "workers", "chief", "evaluator", "gpus", "cpu", "memory", "env",
	"restart-policy", "backoff-limit", "active-deadline", "ttl-after-finished", "clean-pod-policy",
	"tensorboard", "volume", "resume-from",
}

// repeatableFlags take one value a line of the form.
var repeatableFlags = []string{"env", "volume"}

// Submit builds the job as tfk8s submit does (its flags, checked the same way, over
// the manifest if any) in the request's namespace, and creates it, or has the API
// server only validate it.
func (d *dashboardCluster) Submit(ctx context.Context, req dashboard.SubmitRequest) (*dashboard.Submitted, error) {
	job, err := dashboardJob(req)
	if err != nil {
		return nil, err
	}
	var opts []client.CreateOption
	if req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := d.client.Create(ctx, job, opts...); err != nil {
		return nil, fmt.Errorf("creating tfjob %s: %w", job.Name, err)
	}
	var buf bytes.Buffer
	if err := printObject(&buf, forPrinting(job), outputYAML); err != nil {
		return nil, err
	}
	return &dashboard.Submitted{Namespace: job.Namespace, Name: job.Name, YAML: buf.String()}, nil
}

// dashboardJob turns a request of the dashboard into submit's flags and builds the
// job with them, as render does.
func dashboardJob(req dashboard.SubmitRequest) (*tfv1.TFJob, error) {
	f := &submitFlags{}
	cmd := &cobra.Command{}
	f.addFlags(cmd)
	args, err := flagArgs(req.Flags)
	if err != nil {
		return nil, err
	}
	if err := cmd.Flags().Parse(args); err != nil {
		return nil, fmt.Errorf("reading the form: %w", err)
	}
	var base *tfv1.TFJob
	if strings.TrimSpace(req.YAML) != "" {
		if base, err = decodeManifest([]byte(req.YAML)); err != nil {
			return nil, fmt.Errorf("reading the YAML: %w", err)
		}
		// As with -f: the manifest's own values stand where no flag is given.
		f.file = "YAML"
	}
	p, err := f.params(cmd, strings.Fields(req.Command))
	if err != nil {
		return nil, err
	}
	p.Namespace = req.Namespace
	return buildJob(base, p)
}

// flagArgs renders the form's fields as submit's arguments; a field that is no flag
// of the form is refused, so that nothing reaches the files or the S3 settings of
// the dashboard's host.
func flagArgs(flags map[string]string) ([]string, error) {
	var args []string
	for _, name := range dashboardFlags {
		v, ok := flags[name]
		if !ok {
			continue
		}
		values := []string{v}
		if slices.Contains(repeatableFlags, name) {
			values = nonEmptyLines(v)
		}
		for _, v := range values {
			args = append(args, "--"+name+"="+strings.TrimSpace(v))
		}
	}
	for name := range flags {
		if !slices.Contains(dashboardFlags, name) {
			return nil, fmt.Errorf("field %q: not a flag the dashboard submits with (%s)", name, strings.Join(dashboardFlags, ", "))
		}
	}
	return args, nil
}

// nonEmptyLines splits s into its lines that are not blank.
func nonEmptyLines(s string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// Clone reads a past job as a new one to edit: its manifest, without the status
// and the fields the API server sets, not suspended, named <name>-2 (or -3, ...);
// and the form's flags for what they can say of it.
func (d *dashboardCluster) Clone(ctx context.Context, namespace, name string) (*dashboard.SubmitRequest, error) {
	old, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	job := newTFJob()
	job.Name, job.Namespace, job.Labels, job.Annotations = cloneName(name), namespace, old.Labels, old.Annotations
	job.Spec = *old.Spec.DeepCopy()
	job.Spec.RunPolicy.Suspend = nil
	var buf bytes.Buffer
	if err := printObject(&buf, job, outputYAML); err != nil {
		return nil, err
	}
	return &dashboard.SubmitRequest{Namespace: namespace, YAML: buf.String(), Flags: cloneFlags(job), Command: cloneCommand(job)}, nil
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
		if q, ok := c.Resources.Limits[gpuResource]; ok {
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
