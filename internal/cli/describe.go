package cli

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func newDescribeCommand(o *rootOptions) *cobra.Command {
	var replica string
	cmd := &cobra.Command{
		Use:   "describe JOB",
		Short: "Show a job in detail: replicas, pods, conditions, events, TF_CONFIG, artifacts",
		Long: `Show a job in detail: its replicas with each pod's phase, node, restarts and last
exit code; its conditions and events; where its code, data, artifacts and logs are;
and the TF_CONFIG of one replica (--replica, default the first), read from its pod.`,
		Example: "  tfk8s describe mnist --replica worker-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			job, err := jobs.Get(ctx, cs.Client, cs.Namespace, args[0])
			if err != nil {
				return err
			}
			pods, err := jobs.Pods(ctx, cs.Client, job.Namespace, job.Name)
			if err != nil {
				return err
			}
			events, err := jobs.Events(ctx, cs.Client, job)
			if err != nil {
				return err
			}
			return describeJob(o.env.Out, job, pods, events, o.readStored(ctx, cs, job), replica, time.Now())
		},
	}
	cmd.Flags().StringVar(&replica, "replica", "", "replica whose TF_CONFIG to show, e.g. worker-0 (default: the first)")
	return cmd
}

// fromS3 is what describe reads of a job from S3: its replicas' attempts, and its
// progress; each with the error that kept it from being read.
type fromS3 struct {
	replicas    []replicaAttempts
	err         error
	progress    *jobs.JobProgress
	progressErr error
}

// identify prints the job's name and namespace and, for a Kubeflow job, its kind.
func identify(field func(name, value string), job *tfv1.TFJob) {
	field("Name", job.Name)
	field("Namespace", job.Namespace)
	if kubeflow.IsKubeflow(job) {
		field("Kind", "TFJob ("+kubeflow.GVK.GroupVersion().String()+")")
	}
}

// describeJob writes the description of a job, its pods, its replicas' attempts, its
// progress and its events.
func describeJob(w io.Writer, job *tfv1.TFJob, pods []corev1.Pod, events []eventsv1.Event, stored fromS3, replica string, now time.Time) error {
	tw := newTabWriter(w)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	identify(field, job)
	field("State", orNone(string(job.Status.State)))
	field("Created", timestamp(job.CreationTimestamp.Time, now))
	field("Started", timestamp(jobs.TimeOf(job.Status.StartTime), now))
	field("Completed", timestamp(jobs.TimeOf(job.Status.CompletionTime), now))
	field("Image", orNone(jobs.Image(job)))
	field("Command", orNone(strings.Join(jobCommand(job), " ")))
	if c := job.Spec.Code; c != nil {
		field("Code", fmt.Sprintf("%s -> %s", c.Source, cmp.Or(c.Path, tfjob.DefaultCodePath)))
	}
	for _, d := range job.Spec.Data {
		field("Data", fmt.Sprintf("%s -> %s", d.Source, d.Path))
	}
	if a := job.Spec.Artifacts; a != nil {
		base := jobs.ArtifactsBase(job)
		field("Artifacts", base.String()+"<replica>/artifacts/")
		if len(a.Paths) > 0 {
			field("  Paths", strings.Join(a.Paths, ", "))
		}
		if a.Interval != nil {
			field("  Interval", a.Interval.Duration.String())
		}
		field("Logs", base.String()+"<replica>/attempts/<n>/logs/")
	} else {
		field("Kept", "nothing: the job has no spec.artifacts, so its logs and files go with its pods")
	}
	if s := job.Spec.Storage; s != nil {
		field("Storage Secret", s.SecretRef.Name)
	}
	for _, v := range job.Spec.Volumes {
		field("Volume", volumeSummary(job, v))
	}
	if tb := job.Spec.TensorBoard; tb != nil && tb.Enabled {
		field("TensorBoard", tensorBoardSummary(job, now))
	}
	field("Run Policy", runPolicy(job))

	field("GPUs", fmt.Sprintf("%d allocated of %d requested", tfjob.GPUsAllocated(job, pods), tfjob.GPUsRequested(job)))
	describeReplicas(tw, job, pods)
	describePods(tw, pods, now)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := describeAttempts(w, stored.replicas, stored.err, now); err != nil {
		return err
	}
	if job.Spec.Artifacts != nil {
		if err := describeProgress(w, job, stored.progress, stored.progressErr, now); err != nil {
			return err
		}
	}

	fmt.Fprintln(tw, "Conditions:")
	if len(job.Status.Conditions) == 0 {
		fmt.Fprintln(tw, "  <none>")
	} else {
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range job.Status.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime, now), c.Message)
		}
	}

	fmt.Fprintln(tw, "Events:")
	if len(events) == 0 {
		fmt.Fprintln(tw, "  <none>")
	} else {
		fmt.Fprintln(tw, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE")
		for _, e := range events {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, humanSince(jobs.EventTime(&e), now), e.ReportingController, e.Note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return jobs.WriteTFConfig(w, pods, replica)
}

// describeReplicas prints each replica type's counts: its pods, restarts, disruptions
// (re-created after a preemption or eviction, not counted against backoffLimit), GPUs
// held of those asked for, and its last failure.
func describeReplicas(w io.Writer, job *tfv1.TFJob, pods []corev1.Pod) {
	fmt.Fprintln(w, "Replicas:")
	fmt.Fprintln(w, "  TYPE\tDESIRED\tACTIVE\tSUCCEEDED\tFAILED\tRESTARTS\tDISRUPTIONS\tGPUS\tLAST FAILURE")
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		rs := job.Status.ReplicaStatuses[rt]
		if rs == nil {
			rs = &tfv1.ReplicaStatus{}
		}
		last := "<none>"
		if f := rs.LastFailure; f != nil {
			last = fmt.Sprintf("%s exit code %d %s", f.Pod, f.ExitCode, f.Reason)
		}
		var own []corev1.Pod
		for _, p := range pods {
			if p.Labels[tfv1.LabelReplicaType] == tfjob.TaskType(rt) {
				own = append(own, p)
			}
		}
		gpus := gpuFigure(tfjob.GPUsAllocated(job, own), tfjob.ReplicaGPUs(spec)*int64(tfjob.Replicas(spec)))
		fmt.Fprintf(w, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", rt, tfjob.Replicas(spec), rs.Active, rs.Succeeded, rs.Failed,
			rs.Restarts, rs.Disruptions, gpus, strings.TrimSpace(last))
	}
}

// describePods writes a line per pod, then one per container that waits on the user.
func describePods(w io.Writer, pods []corev1.Pod, now time.Time) {
	fmt.Fprintln(w, "Pods:")
	if len(pods) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  NAME\tREPLICA\tPHASE\tNODE\tRESTARTS\tLAST EXIT CODE\tAGE")
		for i := range pods {
			p := &pods[i]
			phase := jobs.PodPhase(p)
			restarts, exit := jobs.ContainerSummary(p)
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, jobs.ReplicaName(p), orNone(phase), orNone(p.Spec.NodeName), restarts, exit, age(p.CreationTimestamp, now))
		}
	}
	describeWaiting(w, pods)
}

// jobCommand is the command of the job's first replica type's main container.
func jobCommand(job *tfv1.TFJob) []string {
	for _, rt := range tfv1.ReplicaTypes {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil {
			if c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers); c != nil {
				return append(slices.Clone(c.Command), c.Args...)
			}
		}
	}
	return nil
}

// runPolicy summarises the run policy.
func runPolicy(job *tfv1.TFJob) string {
	rp := job.Spec.RunPolicy
	var parts []string
	if rp.CleanPodPolicy != nil {
		parts = append(parts, "cleanPodPolicy="+string(*rp.CleanPodPolicy))
	}
	if rp.BackoffLimit != nil {
		parts = append(parts, fmt.Sprintf("backoffLimit=%d", *rp.BackoffLimit))
	}
	if rp.ActiveDeadlineSeconds != nil {
		parts = append(parts, fmt.Sprintf("activeDeadlineSeconds=%d", *rp.ActiveDeadlineSeconds))
	}
	if rp.TTLSecondsAfterFinished != nil {
		parts = append(parts, fmt.Sprintf("ttlSecondsAfterFinished=%d", *rp.TTLSecondsAfterFinished))
	}
	if rp.Suspend != nil && *rp.Suspend {
		parts = append(parts, "suspend=true")
	}
	return orNone(strings.Join(parts, " "))
}

// timestamp renders a time and how long ago it was; "<none>" if zero.
func timestamp(t, now time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.RFC1123Z), humanSince(t, now))
}

// humanSince renders the time since t as kubectl does.
func humanSince(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
