package jobspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Check checks every parameter and returns them typed. fromManifest says the job is
// built over a manifest, whose values then stand where a parameter is left out;
// without one, the defaults apply.
func (p Params) Check(fromManifest bool) (Values, error) {
	v := Values{Name: p.Name, Namespace: p.Namespace, Image: p.Image, Command: p.Command}
	for _, check := range []func(*Values, bool) error{p.checkReplicas, p.checkResources, p.checkDevices, p.checkStorage, p.checkPolicy} {
		if err := check(&v, fromManifest); err != nil {
			return v, err
		}
	}
	return v, nil
}

// checkReplicas checks the name and the replicas: --ps, --workers, --chief and
// --evaluator.
func (p Params) checkReplicas(v *Values, fromManifest bool) error {
	if p.Name != "" {
		if errs := validation.IsDNS1035Label(p.Name); len(errs) > 0 {
			return fmt.Errorf("--name %q: %s", p.Name, strings.Join(errs, "; "))
		}
	}
	if p.PS != nil {
		if *p.PS < 0 {
			return fmt.Errorf("--ps %d: must not be negative", *p.PS)
		}
		v.PS = ptr.To(*p.PS)
	}
	if p.Workers != nil || !fromManifest {
		workers := ptr.Deref(p.Workers, DefaultWorkers)
		if workers < 0 {
			return fmt.Errorf("--workers %d: must not be negative", workers)
		}
		v.Workers = ptr.To(workers)
	}
	v.Chief, v.Evaluator = p.Chief, p.Evaluator
	if !fromManifest && *v.Workers == 0 && !ptr.Deref(p.Chief, false) {
		return fmt.Errorf("--workers 0 needs --chief: a job needs a chief or at least one worker")
	}
	return nil
}

// checkResources checks what every replica gets and where it runs: --gpus,
// --gpu-type, --spread-ps, --queue, --cpu, --memory and --env.
func (p Params) checkResources(v *Values, _ bool) error {
	if p.GPUs != nil {
		if *p.GPUs < 0 {
			return fmt.Errorf("--gpus %d: must not be negative", *p.GPUs)
		}
		v.GPUs = ptr.To(*p.GPUs)
	}
	if p.GPUType != "" {
		if errs := validation.IsValidLabelValue(p.GPUType); len(errs) > 0 {
			return fmt.Errorf("--gpu-type %q: not a node label value: %s", p.GPUType, strings.Join(errs, "; "))
		}
	}
	v.GPUType, v.SpreadPS = p.GPUType, p.SpreadPS
	if v.Queue = p.Queue; p.Queue != "" {
		if errs := validation.IsValidLabelValue(p.Queue); len(errs) > 0 {
			return fmt.Errorf("--queue %q: not a label value: %s", p.Queue, strings.Join(errs, "; "))
		}
	}
	var err error
	if v.CPU, err = ParseQuantity("--cpu", p.CPU); err != nil {
		return err
	}
	if v.Memory, err = ParseQuantity("--memory", p.Memory); err != nil {
		return err
	}
	for _, kv := range p.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("--env %q: want NAME=VALUE", kv)
		}
		if errs := validation.IsEnvVarName(name); len(errs) > 0 {
			return fmt.Errorf("--env %q: %s", kv, strings.Join(errs, "; "))
		}
		v.Env = append(v.Env, corev1.EnvVar{Name: name, Value: value})
	}
	return nil
}

// checkStorage checks what the job keeps: --data (an s3:// prefix), --artifacts,
// --volume, --artifacts-interval, --tensorboard and --resume-from.
func (p Params) checkStorage(v *Values, _ bool) error {
	if strings.HasPrefix(p.Data, "s3://") {
		u, err := storage.ParseURI(p.Data)
		if err != nil {
			return fmt.Errorf("--data: %w", err)
		}
		v.Data = []tfv1.DataSource{{Source: u.Dir().String(), Path: DefaultDataPath}}
	}
	v.ArtifactPaths = p.Artifacts
	for _, a := range p.Artifacts {
		if a == "" {
			return fmt.Errorf("--artifacts: empty path")
		}
	}
	var err error
	if v.Volumes, err = parseVolumes(p.Volumes); err != nil {
		return err
	}
	if d := p.ArtifactsInterval; d != nil {
		if d.Duration < 0 {
			return fmt.Errorf("--artifacts-interval %v: must not be negative", d.Duration)
		}
		v.ArtifactsInterval = ptr.To(d.Duration)
	}
	v.TensorBoard = p.TensorBoard
	if p.ResumeFrom != "" {
		name, run, _ := strings.Cut(p.ResumeFrom, "/")
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return fmt.Errorf("--resume-from %q: want the name of an earlier job: %s", p.ResumeFrom, strings.Join(errs, "; "))
		}
		if run != "" && !storage.IsRunID(run) {
			return fmt.Errorf("--resume-from %q: want JOB or JOB/RUN, RUN being one of its runs (8 hex digits)", p.ResumeFrom)
		}
		v.ResumeFrom = p.ResumeFrom
	}
	return nil
}
