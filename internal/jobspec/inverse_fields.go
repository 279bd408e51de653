package jobspec

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The fields' inverses: each reads its parameter from a job's view, leaving it out
// where the job does not say it, as the flag not given would.

func nameOf(v view, p *Params) { p.Name = v.job.Name }

func imageOf(v view, p *Params) {
	if v.c != nil {
		p.Image = v.c.Image
	}
}

// commandOf is the container's command and its arguments, as submit's arguments
// after -- set them.
func commandOf(v view, p *Params) {
	if v.c != nil && len(v.c.Command)+len(v.c.Args) > 0 {
		p.Command = append(slices.Clone(v.c.Command), v.c.Args...)
	}
}

func replicasOf(rt tfv1.ReplicaType, param func(*Params) **int32) func(view, *Params) {
	return func(v view, p *Params) {
		if spec := v.job.Spec.TFReplicaSpecs[rt]; spec != nil {
			*param(p) = ptr.To(tfjob.Replicas(spec))
		} else if rt == tfv1.ReplicaTypeWorker {
			// Without a manifest, no --workers means one.
			*param(p) = ptr.To[int32](0)
		}
	}
}

func presenceOf(rt tfv1.ReplicaType, param func(*Params) **bool) func(view, *Params) {
	return func(v view, p *Params) {
		if v.job.Spec.TFReplicaSpecs[rt] != nil {
			*param(p) = ptr.To(true)
		}
	}
}

// gpusOf reads the GPUs of a replica that has them: the parameter servers have none.
func gpusOf(v view, p *Params) {
	for _, rt := range tfv1.ReplicaTypes {
		spec := v.job.Spec.TFReplicaSpecs[rt]
		if spec == nil || rt == tfv1.ReplicaTypePS {
			continue
		}
		if c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers); c != nil {
			if q, ok := c.Resources.Limits[tfjob.GPUResource]; ok {
				p.GPUs = ptr.To(q.Value())
			}
		}
		return
	}
}

func limitOf(name corev1.ResourceName, param func(*Params) *string) func(view, *Params) {
	return func(v view, p *Params) {
		if v.c == nil {
			return
		}
		if q, ok := v.c.Resources.Limits[name]; ok {
			*param(p) = q.String()
		}
	}
}

func restartPolicyOf(v view, p *Params) {
	if v.spec != nil && v.spec.RestartPolicy != "" {
		p.RestartPolicy = ptr.To(string(v.spec.RestartPolicy))
	}
}

func backoffLimitOf(v view, p *Params) {
	p.BackoffLimit = ptrCopy(v.job.Spec.RunPolicy.BackoffLimit)
}

func activeDeadlineOf(v view, p *Params) {
	if s := v.job.Spec.RunPolicy.ActiveDeadlineSeconds; s != nil {
		p.ActiveDeadline = &metav1.Duration{Duration: time.Duration(*s) * time.Second}
	}
}

func ttlAfterFinishedOf(v view, p *Params) {
	if s := v.job.Spec.RunPolicy.TTLSecondsAfterFinished; s != nil {
		p.TTLAfterFinished = &metav1.Duration{Duration: time.Duration(*s) * time.Second}
	}
}

func cleanPodPolicyOf(v view, p *Params) {
	if c := v.job.Spec.RunPolicy.CleanPodPolicy; c != nil {
		p.CleanPodPolicy = ptr.To(string(*c))
	}
}

func tensorBoardOf(v view, p *Params) {
	if tb := v.job.Spec.TensorBoard; tb != nil {
		p.TensorBoard = ptr.To(tb.Enabled)
	}
}

// resumeFromOf is the earlier job (JOB or JOB/RUN) whose stored artifacts the job
// starts from, when they are stored where its own go, as --resume-from sets them.
func resumeFromOf(v view, p *Params) {
	a := v.job.Spec.Artifacts
	if a == nil || a.ResumeFrom == "" {
		return
	}
	dest, err := storage.ParseURI(a.Destination)
	if err != nil {
		return
	}
	under := storage.JobPrefix(dest.Dir(), v.job.Namespace, "").String()
	if earlier, ok := strings.CutPrefix(a.ResumeFrom, under); ok {
		p.ResumeFrom = strings.TrimSuffix(earlier, "/")
	}
}

// envOf is the container's environment given as values; one read from elsewhere
// (a Secret, a field) has no NAME=VALUE to say it.
func envOf(v view, p *Params) {
	if v.c == nil {
		return
	}
	for _, e := range v.c.Env {
		if e.ValueFrom == nil {
			p.Env = append(p.Env, e.Name+"="+e.Value)
		}
	}
}

// volumesOf writes each volume as --volume reads it.
func volumesOf(v view, p *Params) {
	for _, vol := range v.job.Spec.Volumes {
		parts := []string{"name=" + vol.Name, "mount=" + vol.MountPath}
		if vol.Size != nil {
			parts = append(parts, "size="+vol.Size.String())
		}
		if vol.StorageClassName != nil {
			parts = append(parts, "storageClass="+*vol.StorageClassName)
		}
		if vol.ExistingClaim != "" {
			parts = append(parts, "existing="+vol.ExistingClaim)
		}
		if vol.ReadOnly {
			parts = append(parts, "readOnly")
		}
		if vol.Retain {
			parts = append(parts, "retain")
		}
		p.Volumes = append(p.Volumes, strings.Join(parts, ","))
	}
}

func gpuTypeOf(v view, p *Params) {
	for _, spec := range v.job.Spec.TFReplicaSpecs {
		if spec != nil && spec.Template.Spec.NodeSelector[gpuProductLabel] != "" {
			p.GPUType = spec.Template.Spec.NodeSelector[gpuProductLabel]
			return
		}
	}
}

// spreadPSOf reports --spread-ps when the parameter servers carry the anti-affinity
// it adds.
func spreadPSOf(v view, p *Params) {
	ps := v.job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS]
	if ps == nil || ps.Template.Spec.Affinity == nil || ps.Template.Spec.Affinity.PodAntiAffinity == nil {
		return
	}
	var want corev1.PodSpec
	spreadPS(v.job.Name, &want)
	term := want.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0]
	for _, t := range ps.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if t.Weight == term.Weight && t.PodAffinityTerm.TopologyKey == term.PodAffinityTerm.TopologyKey &&
			t.PodAffinityTerm.LabelSelector != nil &&
			maps.Equal(t.PodAffinityTerm.LabelSelector.MatchLabels, term.PodAffinityTerm.LabelSelector.MatchLabels) {
			p.SpreadPS = true
		}
	}
}

func queueOf(v view, p *Params) { p.Queue = v.job.Labels[tfv1.LabelKueueQueue] }

// dataOf is the data set --data copies to its path.
func dataOf(v view, p *Params) {
	if d := v.job.Spec.Data; len(d) == 1 && d[0].Path == DefaultDataPath {
		p.Data = d[0].Source
	}
}

func artifactsOf(v view, p *Params) {
	if a := v.job.Spec.Artifacts; a != nil {
		p.Artifacts = slices.Clone(a.Paths)
	}
}

func artifactsIntervalOf(v view, p *Params) {
	if a := v.job.Spec.Artifacts; a != nil && a.Interval != nil {
		p.ArtifactsInterval = a.Interval.DeepCopy()
	}
}

func exposeCredentialsOf(v view, p *Params) {
	if s := v.job.Spec.Storage; s != nil && s.ExposeCredentials {
		p.ExposeStorageCredentials = ptr.To(true)
	}
}

// ptrCopy is a copy of *x, nil for nil.
func ptrCopy[T any](x *T) *T {
	if x == nil {
		return nil
	}
	return ptr.To(*x)
}
