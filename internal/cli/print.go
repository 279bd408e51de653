package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Output formats of -o.
const (
	outputTable = ""
	outputWide  = "wide"
	outputYAML  = "yaml"
	outputJSON  = "json"
)

// checkOutput checks -o against the formats a command supports.
func checkOutput(output string, allowed ...string) error {
	for _, a := range allowed {
		if output == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != outputTable {
			names = append(names, a)
		}
	}
	return fmt.Errorf("-o %q: want one of %s", output, strings.Join(names, ", "))
}

// printObject prints obj as YAML or JSON, as kubectl does: with its apiVersion and kind,
// without managedFields.
func printObject(w io.Writer, obj any, format string) error {
	var out []byte
	var err error
	switch format {
	case outputJSON:
		out, err = json.MarshalIndent(obj, "", "    ")
		out = append(out, '\n')
	default:
		out, err = yaml.Marshal(obj)
	}
	if err != nil {
		return fmt.Errorf("encoding %s: %w", format, err)
	}
	_, err = w.Write(out)
	return err
}

// forPrinting is the job as get -o yaml|json prints it: a kubeflow.org job as tfk8s's
// model of it, under its own apiVersion, so that a reader (the Python SDK) tells the
// groups apart.
func forPrinting(job *tfv1.TFJob) *tfv1.TFJob {
	out := jobspec.ForPrinting(job)
	out.APIVersion = kubeflow.GVKOf(job).GroupVersion().String()
	return out
}

// jobList is what -o yaml|json prints for several jobs: a kubectl List.
type jobList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []*tfv1.TFJob `json:"items"`
}

// printJobs prints jobs in the format of -o: a table (wide or not), or a List. The
// table's GPUS column is the GPUs each job's pods hold (allocated, by "namespace/name")
// over those its replicas ask for.
func printJobs(w io.Writer, jobs []tfv1.TFJob, allocated map[string]int64, progress map[string]progressFigures, format string, withNamespace bool, now time.Time) error {
	if format == outputYAML || format == outputJSON {
		list := jobList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []*tfv1.TFJob{}}
		for i := range jobs {
			list.Items = append(list.Items, forPrinting(&jobs[i]))
		}
		return printObject(w, list, format)
	}
	tw := newTabWriter(w)
	header := []string{"NAME", "STATE", "WORKERS", "PS", "GPUS", "AGE"}
	if withNamespace {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if format == outputWide {
		header = append(header, "CHIEF", "EVALUATOR", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS", "STEP", "LOSS", "IMAGE")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range jobs {
		key := jobs[i].Namespace + "/" + jobs[i].Name
		gpus := gpuFigure(allocated[key], tfjob.GPUsRequested(&jobs[i]))
		fmt.Fprintln(tw, strings.Join(jobRow(&jobs[i], gpus, progress[key], format == outputWide, withNamespace, now), "\t"))
	}
	return tw.Flush()
}

// jobRow is a job's line of the table, with its GPUS column and, wide, its STEP and
// LOSS ("-" when unset: not running, or storing nothing).
func jobRow(job *tfv1.TFJob, gpus string, progress progressFigures, wide, withNamespace bool, now time.Time) []string {
	row := []string{
		jobs.RefOf(job),
		stateCell(job),
		replicaCount(job, tfv1.ReplicaTypeWorker),
		replicaCount(job, tfv1.ReplicaTypePS),
		gpus,
		age(job.CreationTimestamp, now),
	}
	if withNamespace {
		row = append([]string{job.Namespace}, row...)
	}
	if wide {
		var active, succeeded, failed, restarts int32
		for _, rs := range job.Status.ReplicaStatuses {
			active += rs.Active
			succeeded += rs.Succeeded
			failed += rs.Failed
			restarts += rs.Restarts
		}
		row = append(row,
			replicaCount(job, tfv1.ReplicaTypeChief),
			replicaCount(job, tfv1.ReplicaTypeEvaluator),
			fmt.Sprint(active), fmt.Sprint(succeeded), fmt.Sprint(failed), fmt.Sprint(restarts),
			cmp.Or(progress.step, "-"), cmp.Or(progress.loss, "-"),
			orNone(jobs.Image(job)),
		)
	}
	return row
}

// stateCell is a STATE cell: the job's state, and while a replica waits on the user
// (its ReplicasWaiting condition), the condition's reason, the one most waiting
// replicas share: a job keeps its state, Created or Running, until the user fixes its
// image or Secret, so the state alone would not say it is stuck.
func stateCell(job *tfv1.TFJob) string {
	s := orNone(string(job.Status.State))
	if c := meta.FindStatusCondition(job.Status.Conditions, string(tfv1.JobReplicasWaiting)); c != nil && c.Status == metav1.ConditionTrue {
		s += " (" + c.Reason + ")"
	}
	return s
}

// gpuFigure is a GPUS cell: allocated/requested, or - for a job that neither asks for
// nor holds any, as the dashboard shows it.
func gpuFigure(allocated, requested int64) string {
	if allocated == 0 && requested == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", allocated, requested)
}

// replicaCount is the number of replicas of a type, 0 when there is none.
func replicaCount(job *tfv1.TFJob, rt tfv1.ReplicaType) string {
	return fmt.Sprint(tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]))
}

// age renders the time since t as kubectl does ("5m", "3d"), "<unknown>" if unset.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// orNone renders an empty value as kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
