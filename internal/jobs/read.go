package jobs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// PollInterval is how often wait and follow look at a job.
var PollInterval = 500 * time.Millisecond

// NotFoundError says that a job does not exist, in plain words.
type NotFoundError struct {
	Namespace, Name string
	Err             error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("tfjob %q not found in namespace %q", e.Name, e.Namespace)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// ConditionTrue reports whether the job's condition typ is True.
func ConditionTrue(job *tfv1.TFJob, typ tfv1.JobState) bool {
	return meta.IsStatusConditionTrue(job.Status.Conditions, string(typ))
}

// PodPhase is a pod's phase, saying when the pod is being deleted.
func PodPhase(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return string(p.Status.Phase) + " (deleting)"
	}
	return string(p.Status.Phase)
}

// Pods lists a job's replicas' pods, in replica order: chief, master, PS, workers,
// evaluator, each by index.
func Pods(ctx context.Context, c client.Client, namespace, job string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
		return nil, fmt.Errorf("listing the pods of tfjob %s: %w", job, err)
	}
	// The record pod, which writes a finished job's end, is no replica.
	list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Labels[tfjob.LabelRecord] != "" })
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return CompareReplicas(ReplicaName(&a), ReplicaName(&b)) })
	return list.Items, nil
}

// Events lists the events about a job (events.k8s.io), oldest first.
func Events(ctx context.Context, c client.Client, job *tfv1.TFJob) ([]eventsv1.Event, error) {
	list := &eventsv1.EventList{}
	err := c.List(ctx, list, client.InNamespace(job.Namespace),
		client.MatchingFields{"regarding.name": job.Name, "regarding.kind": "TFJob"})
	if err != nil {
		return nil, fmt.Errorf("listing the events of tfjob %s: %w", job.Name, err)
	}
	events := slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.Regarding.UID != job.UID })
	slices.SortStableFunc(events, func(a, b eventsv1.Event) int { return EventTime(&a).Compare(EventTime(&b)) })
	return events, nil
}

// EventTime is when an event last happened.
func EventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}

// ReplicaName is a pod's replica, as the agent names it in S3: "<type>-<index>".
func ReplicaName(pod *corev1.Pod) string {
	return pod.Labels[tfv1.LabelReplicaType] + "-" + pod.Labels[tfv1.LabelReplicaIndex]
}

// CompareReplicas orders replica names by type (chief, master, ps, worker,
// evaluator) then index.
func CompareReplicas(a, b string) int {
	rank := func(name string) (int, int) {
		typ, index, _ := strings.Cut(name, "-")
		i, _ := strconv.Atoi(index)
		for r, rt := range tfv1.ReplicaTypes {
			if strings.EqualFold(typ, string(rt)) {
				return r, i
			}
		}
		return len(tfv1.ReplicaTypes), i
	}
	ra, ia := rank(a)
	rb, ib := rank(b)
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ia, ib), strings.Compare(a, b))
}

// ContainerSummary is the restarts and last exit code of a pod's main container.
func ContainerSummary(pod *corev1.Pod) (int32, string) {
	s := tfjob.TensorFlowStatus(pod)
	if s == nil {
		return 0, "-"
	}
	t := tfjob.Terminated(pod)
	if t == nil {
		return s.RestartCount, "-"
	}
	return s.RestartCount, strings.TrimSpace(fmt.Sprintf("%d %s", t.ExitCode, t.Reason))
}

// ArtifactsBase is the prefix of the job's run in S3, where its replicas store:
// <destination>/<namespace>/<job>/<run>/.
func ArtifactsBase(job *tfv1.TFJob) storage.URI {
	dest, err := storage.ParseURI(job.Spec.Artifacts.Destination)
	if err != nil {
		// The API server checked the pattern; a URI it let through parses.
		return storage.URI{}
	}
	return storage.RunPrefix(dest, job.Namespace, job.Name, tfjob.RunID(string(job.UID)))
}

// PodServing: Running, Ready and not being deleted.
func PodServing(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodWaitState says why a pod does not serve yet: its phase, and the first
// container's waiting reason or that it is not ready.
func PodWaitState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	state := string(cmp.Or(p.Status.Phase, corev1.PodPending))
	if p.Spec.NodeName == "" {
		return state + ", not scheduled to a node yet"
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
			return state + " (" + c.Name + ": " + c.State.Waiting.Reason + ")"
		}
	}
	if p.Status.Phase == corev1.PodRunning {
		return "Running, not ready"
	}
	return state
}

// Image is the image of the job's first replica type's main container.
func Image(job *tfv1.TFJob) string {
	for _, rt := range tfv1.ReplicaTypes {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil {
			if c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers); c != nil {
				return c.Image
			}
		}
	}
	return ""
}

// TimeOf is the time of an optional timestamp, zero if unset.
func TimeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}
