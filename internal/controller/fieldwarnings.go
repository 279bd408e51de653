package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// schedulingPath is the path of the fields ignoredFields names.
const schedulingPath = "runPolicy.schedulingPolicy."

// ignoredField is a field of a job that does nothing, and why when the gang
// scheduler alone does not say it.
type ignoredField struct {
	path, why string
}

// ignoredFields lists the gang scheduling fields of a job that names no provider which
// the controller's default provider def has no use for. Admission refuses them when
// the job names its provider; here only the controller knows what the job gets.
func ignoredFields(job *tfv1.TFJob, def tfv1.GangProvider) []ignoredField {
	sp := job.Spec.RunPolicy.SchedulingPolicy
	if sp == nil || sp.Provider != "" {
		return nil
	}
	var out []ignoredField
	if sp.MinAvailable != nil && def == "" {
		out = append(out, ignoredField{path: schedulingPath + "minAvailable"})
	}
	if sp.Queue != "" && def != tfv1.GangProviderVolcano {
		out = append(out, ignoredField{schedulingPath + "queue",
			"only volcano has queues; for Kueue, label the job " + tfv1.LabelKueueQueue})
	}
	if len(sp.MinResources) > 0 && def != tfv1.GangProviderVolcano && def != tfv1.GangProviderSchedulerPlugins {
		out = append(out, ignoredField{schedulingPath + "minResources", "only volcano and scheduler-plugins check it"})
	}
	return out
}

// ignoredFieldsMessage says which gang scheduler the job gets and which of its fields
// it ignores, each by its path.
func ignoredFieldsMessage(fields []ignoredField, def tfv1.GangProvider) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = "spec." + f.path
		if f.why != "" {
			names[i] += " (" + f.why + ")"
		}
	}
	gets := fmt.Sprintf(", so it gets the controller's --gang-scheduler %s", def)
	if def == "" {
		gets = " and the controller's --gang-scheduler is none, so its pods are scheduled one by one"
	}
	return fmt.Sprintf("the job names no gang scheduler (spec.runPolicy.schedulingPolicy.provider)%s: ignored %s",
		gets, strings.Join(names, ", "))
}

// noteIgnoredFields sets the job's FieldsIgnored condition to the fields ignoredFields
// and reservedTemplateFields find, or removes it when there are none. A finished job is
// left as it is, so that a controller started with other flags rewrites no old job.
func noteIgnoredFields(job *tfv1.TFJob, def tfv1.GangProvider, st *tfv1.TFJobStatus, now metav1.Time) {
	if jobFinished(st) {
		return
	}
	var msgs []string
	if fields := ignoredFields(job, def); len(fields) > 0 {
		msgs = append(msgs, ignoredFieldsMessage(fields, def))
	}
	if fields := reservedTemplateFields(job); len(fields) > 0 {
		msgs = append(msgs, reservedFieldsMessage(fields))
	}
	if len(msgs) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, string(tfv1.JobFieldsIgnored))
		return
	}
	setCondition(st, tfv1.JobFieldsIgnored, metav1.ConditionTrue, tfv1.ReasonFieldsIgnored, strings.Join(msgs, "; "), now)
}

// announceIgnoredFields emits a Warning event when the written status newly says that
// fields are ignored, or names other fields than before.
func (r *TFJobReconciler) announceIgnoredFields(job *tfv1.TFJob, before, after *tfv1.TFJobStatus) {
	now := findCondition(after, tfv1.JobFieldsIgnored)
	if now == nil || now.Status != metav1.ConditionTrue {
		return
	}
	if was := findCondition(before, tfv1.JobFieldsIgnored); was != nil && was.Status == now.Status && was.Message == now.Message {
		return
	}
	r.event(job, corev1.EventTypeWarning, tfv1.ReasonFieldsIgnored, "%s", now.Message)
}

// reservedTemplateFields lists, by path, the reserved labels and annotations of the
// job's replica templates, which build.Pod leaves out of the pods.
func reservedTemplateFields(job *tfv1.TFJob) []ignoredField {
	var out []ignoredField
	for _, rt := range tfv1.ReplicaTypes {
		spec, ok := job.Spec.TFReplicaSpecs[rt]
		if !ok || spec == nil {
			continue
		}
		for _, f := range []struct {
			name string
			m    map[string]string
		}{{"labels", spec.Template.Labels}, {"annotations", spec.Template.Annotations}} {
			_, dropped := build.WithoutReserved(f.m)
			for _, k := range dropped {
				out = append(out, ignoredField{path: fmt.Sprintf("tfReplicaSpecs.%s.template.metadata.%s[%s]", rt, f.name, k)})
			}
		}
	}
	return out
}

// reservedFieldsMessage says that the controller left the reserved labels and
// annotations of the templates out of the pods, each by its path.
func reservedFieldsMessage(fields []ignoredField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = "spec." + f.path
	}
	return fmt.Sprintf("labels and annotations under %s/ are written by the controller alone: ignored %s",
		strings.Join(build.ReservedDomains, "/ and "), strings.Join(names, ", "))
}
