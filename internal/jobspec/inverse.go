package jobspec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// view is a job as the parameters see it: the parameters set every replica alike, so
// the first replica type's main container stands for them all.
type view struct {
	job  *tfv1.TFJob
	spec *tfv1.ReplicaSpec
	c    *corev1.Container
}

// frontEndPaths are the spec's parts a front end makes itself, not a parameter: the
// code it uploaded, the bucket it configured and the Secret of its S3 settings.
var frontEndPaths = []string{"spec.code", "spec.artifacts.destination", "spec.storage.secretRef"}

// Inverse returns the parameters that build job, read through the same fields as the
// flags, and the paths of what they cannot say: a front end's own parts (the code,
// the artifacts' bucket, the storage Secret) when the job has them, and every other
// part of the job that Build of those parameters would not make again.
func Inverse(job *tfv1.TFJob) (Params, []string) {
	// A job read from the API server has its defaults; one from a file says the same.
	job = job.DeepCopy()
	withServerDefaults(&job.Spec)
	v := view{job: job}
	for _, rt := range []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeMaster, tfv1.ReplicaTypeWorker, tfv1.ReplicaTypePS, tfv1.ReplicaTypeEvaluator} {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil {
			v.spec, v.c = spec, tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
			break
		}
	}
	var p Params
	for _, f := range fields {
		// A field without its inverse is not read: what it set is then reported.
		if f.inverse != nil {
			f.inverse(v, &p)
		}
	}
	return p, unsaid(job, p)
}

// unsaid names the paths of job that the parameters p do not build again, the front
// end's parts first.
func unsaid(job *tfv1.TFJob, p Params) []string {
	var out []string
	s := job.Spec
	for i, given := range []bool{s.Code != nil, s.Artifacts != nil && s.Artifacts.Destination != "", s.Storage != nil && s.Storage.SecretRef.Name != ""} {
		if given {
			out = append(out, frontEndPaths[i])
		}
	}
	v, err := p.Check(false)
	if err == nil {
		v.Namespace, v.Code = job.Namespace, s.Code
		if s.Artifacts != nil {
			v.ArtifactsDestination = s.Artifacts.Destination
		}
		if s.Storage != nil {
			v.SecretName = s.Storage.SecretRef.Name
		}
		var again *tfv1.TFJob
		if again, err = Build(nil, v); err == nil {
			return append(out, jobDiff("", comparable(job), comparable(again))...)
		}
	}
	// Parameters that do not build leave the whole spec unsaid.
	return append(out, fmt.Sprintf("spec (%v)", err))
}

// comparable is what of a job the parameters say, as JSON: its name, labels,
// annotations and spec, a command's arguments folded into it as Build writes them.
func comparable(job *tfv1.TFJob) any {
	spec := job.Spec.DeepCopy()
	withServerDefaults(spec)
	for _, rs := range spec.TFReplicaSpecs {
		if rs == nil {
			continue
		}
		for i := range rs.Template.Spec.Containers {
			if c := &rs.Template.Spec.Containers[i]; len(c.Command) > 0 && len(c.Args) > 0 {
				c.Command, c.Args = append(c.Command, c.Args...), nil
			}
		}
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"name": job.Name, "labels": job.Labels, "annotations": job.Annotations}, "spec": spec})
	if err != nil {
		panic(err) // a TFJob always encodes
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// jobDiff names the paths under at where a (the job) says what b (built again) does
// not, sorted: the deepest object key, or a list's index when both lists are as long.
func jobDiff(at string, a, b any) []string {
	join := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			break
		}
		var out []string
		for k := range a {
			out = append(out, jobDiff(join(k), a[k], bm[k])...)
		}
		slices.Sort(out)
		return out
	case []any:
		bl, ok := b.([]any)
		if !ok || len(bl) != len(a) {
			break
		}
		var out []string
		for i := range a {
			out = append(out, jobDiff(fmt.Sprintf("%s[%d]", at, i), a[i], bl[i])...)
		}
		return out
	default:
		if a == b {
			return nil
		}
	}
	if a == nil || a == "" || a == false {
		// What the job leaves out, the parameters may fill with a default: nothing of
		// the job is lost.
		return nil
	}
	return []string{at}
}

// withServerDefaults sets what the CRD's defaults set where spec leaves it out, so
// that a job read from the API server and one built for it compare alike.
func withServerDefaults(spec *tfv1.TFJobSpec) {
	spec.StartupPolicy = cmp.Or(spec.StartupPolicy, tfv1.StartupPolicyParallel)
	spec.Networking.Mode = cmp.Or(spec.Networking.Mode, tfv1.NetworkingModeDNS)
	for _, rs := range spec.TFReplicaSpecs {
		if rs != nil {
			rs.Replicas = cmp.Or(rs.Replicas, ptr.To[int32](1))
			rs.RestartPolicy = cmp.Or(rs.RestartPolicy, tfv1.RestartPolicyNever)
			if dc := rs.DeviceClaim; dc != nil {
				dc.Count = cmp.Or(dc.Count, ptr.To[int64](1))
			}
		}
	}
	rp := &spec.RunPolicy
	rp.CleanPodPolicy = cmp.Or(rp.CleanPodPolicy, ptr.To(tfv1.CleanPodPolicyRunning))
	rp.BackoffLimit = cmp.Or(rp.BackoffLimit, ptr.To[int32](DefaultBackoffLimit))
	if a := spec.Artifacts; a != nil {
		a.Interval = cmp.Or(a.Interval, &metav1.Duration{Duration: DefaultArtifactsInterval})
	}
	if c := spec.Code; c != nil {
		c.Path = cmp.Or(c.Path, tfjob.DefaultCodePath)
	}
	if tb := spec.TensorBoard; tb != nil {
		tb.TTLSecondsAfterFinished = cmp.Or(tb.TTLSecondsAfterFinished, ptr.To[int32](3600))
	}
}
