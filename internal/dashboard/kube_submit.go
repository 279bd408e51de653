package dashboard

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
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
	return jobs.WriteRunRecord(ctx, c, job, time.Now())
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
	req := cloneForm(job)
	req.Namespace, req.YAML = namespace, string(y)
	return req, nil
}

// cloneForm is the form's fields for job, read by jobspec.Inverse. The form makes
// the whole job of its fields, so a job with parts it cannot say (code, artifacts,
// a node selector, ...) has none, and those parts are named: only its YAML is its
// clone. Labels and annotations are the YAML's too, and a form's job has its own.
func cloneForm(job *tfv1.TFJob) *SubmitRequest {
	p, unsaid := jobspec.Inverse(job)
	values, command, outside := jobspec.ToForm(p)
	req := &SubmitRequest{Command: command, Unsaid: outside}
	for _, path := range unsaid {
		if strings.HasPrefix(path, "spec") {
			req.Unsaid = append(req.Unsaid, path)
		}
	}
	if len(req.Unsaid) == 0 {
		req.Flags = values
	}
	return req
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
