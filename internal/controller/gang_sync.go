package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=create
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=create
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=create

// gangView is what observe reads of the job's gang scheduler: whether it is to be
// asked, and the first version of its group object the API server serves.
type gangView struct {
	// provider is the job's gang scheduler, "" when it has none or its pods exist.
	provider tfv1.GangProvider
	// version is the version of the group object served, "" for none.
	version string
}

// readGang asks discovery which version of the job's group object is served, when the
// job has a gang scheduler and no pod yet: tfk8s created the group of a job with pods
// before them, so a restarted controller does not ask once per running job.
func (r *TFJobReconciler) readGang(job *tfv1.TFJob, pods []*corev1.Pod) (gangView, error) {
	provider := build.GangProvider(job, r.Gang.DefaultProvider)
	if provider == "" || len(pods) > 0 || jobFinished(&job.Status) || jobSuspended(job) {
		return gangView{}, nil
	}
	version, err := r.servedVersion(gangKinds[provider])
	return gangView{provider: provider, version: version}, err
}

// decideGang returns the job's group object to create before its pods, or a message
// saying why the job is refused when the scheduler's API is not served: its pods would
// then wait forever for a group nobody places (or be placed one by one by the default
// scheduler), so none is created.
func decideGang(job *tfv1.TFJob, v gangView) (group client.Object, refused string) {
	if v.provider == "" {
		return nil, ""
	}
	kind := gangKinds[v.provider]
	if v.version == "" {
		return nil, fmt.Sprintf("gang scheduler %q (runPolicy.schedulingPolicy.provider or the controller's --gang-scheduler) is not available: the API server does not serve %s %s/%s",
			v.provider, kind.Kind, kind.Group, strings.Join(kind.versions, " or "))
	}
	return build.Gang(job, v.provider, v.version), ""
}

// createGang creates the job's group object before its pods. A group that exists
// already (a job resumed after a suspension) is kept as it is: its policy is immutable
// in every provider.
func (r *TFJobReconciler) createGang(ctx context.Context, v gangView, group client.Object) error {
	if group == nil {
		return nil
	}
	kind := gangKinds[v.provider]
	if err := r.Create(ctx, group); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s: %w", kind.Kind, group.GetName(), err)
	}
	log.FromContext(ctx).V(2).Info("Gang group ready", "provider", v.provider, "kind", kind.WithVersion(v.version))
	return nil
}

// servedVersion is the first of kind's versions the API server serves, "" for none.
// Each is asked alone: asked together, the mapper fails the whole lookup when any one
// of them is missing.
func (r *TFJobReconciler) servedVersion(kind gangKind) (string, error) {
	for _, v := range kind.versions {
		_, err := r.RESTMapper().RESTMapping(kind.GroupKind, v)
		if err == nil {
			return v, nil
		}
		if !meta.IsNoMatchError(err) {
			return "", fmt.Errorf("discovering %s: %w", kind.WithVersion(v).GroupVersion(), err)
		}
	}
	return "", nil
}

// enforceScheduleTimeout fails a running job some of whose pods have waited for a node
// longer than scheduleTimeoutSeconds, or, under onScheduleTimeout: Suspend, sets its
// Suspended condition and returns suspend for the act step to set runPolicy.suspend.
// No gang scheduler gives up on a gang by itself, and a job holding half its replicas
// blocks others. It also returns when to look again, or 0.
func enforceScheduleTimeout(job *tfv1.TFJob, pods []*corev1.Pod, st *tfv1.TFJobStatus, now metav1.Time) (suspend bool, wait time.Duration) {
	if jobFinished(st) || jobSuspended(job) {
		return false, 0
	}
	msg, wait := scheduleTimedOut(job, pods, now.Time)
	switch {
	case msg == "":
		return false, wait
	case suspendsOnScheduleTimeout(job):
		msg += "; the job is suspended: `tfk8s resume` tries again"
		setCondition(st, tfv1.JobSuspended, metav1.ConditionTrue, tfv1.ReasonGangScheduleTimeout, msg, now)
		setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonGangScheduleTimeout, msg, now)
		st.StartTime = nil
		return true, 0
	default:
		finish(st, tfv1.JobFailed, tfv1.ReasonGangScheduleTimeout, msg, now)
		return false, 0
	}
}

// suspendsOnScheduleTimeout reports whether the job asks to be suspended, not failed,
// when it is not scheduled in time.
func suspendsOnScheduleTimeout(job *tfv1.TFJob) bool {
	sp := job.Spec.RunPolicy.SchedulingPolicy
	return sp != nil && sp.OnScheduleTimeout == tfv1.ScheduleTimeoutSuspend
}

// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs,verbs=patch

// suspendOnScheduleTimeout sets runPolicy.suspend on a job not scheduled in time, so
// that `tfk8s resume` (which clears the field) schedules it again. The job is updated in
// place, so the status is written on its new version.
func (r *TFJobReconciler) suspendOnScheduleTimeout(ctx context.Context, job *tfv1.TFJob) error {
	before := job.DeepCopy()
	job.Spec.RunPolicy.Suspend = ptr.To(true)
	if err := r.Patch(ctx, job, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("suspending the job after its schedule timeout: %w", err)
	}
	r.expectations.expectStatusWritten(job.UID, before.ResourceVersion)
	log.FromContext(ctx).V(2).Info("Suspended: not scheduled within scheduleTimeoutSeconds")
	return nil
}

// maxUnscheduledListed bounds the pods a timeout message names.
const maxUnscheduledListed = 10

// scheduleTimedOut returns, when an active pod of the job has not been bound to a node
// within scheduleTimeoutSeconds of its creation, a message naming the unbound pods and
// the scheduler's reason for each (its PodScheduled condition); else when the first of
// them times out, or 0 when none is waiting or the job sets no timeout.
func scheduleTimedOut(job *tfv1.TFJob, pods []*corev1.Pod, now time.Time) (msg string, wait time.Duration) {
	sp := job.Spec.RunPolicy.SchedulingPolicy
	if sp == nil || sp.ScheduleTimeoutSeconds == nil {
		return "", 0
	}
	timeout := time.Duration(*sp.ScheduleTimeoutSeconds) * time.Second
	var unbound []*corev1.Pod
	expired := false
	for _, p := range pods {
		if !isActive(p) || p.Spec.NodeName != "" {
			continue
		}
		unbound = append(unbound, p)
		// The API server records creation to the second: the pod may be up to a second
		// younger than its timestamp says, and is never failed early.
		left := p.CreationTimestamp.Add(time.Second + timeout).Sub(now)
		if left <= 0 {
			expired = true
		} else {
			wait = minPositive(wait, left)
		}
	}
	if !expired {
		return "", wait
	}
	sort.Slice(unbound, func(i, j int) bool { return unbound[i].Name < unbound[j].Name })
	var lines []string
	for i, p := range unbound {
		if i == maxUnscheduledListed {
			lines = append(lines, fmt.Sprintf("and %d more", len(unbound)-i))
			break
		}
		lines = append(lines, fmt.Sprintf("%s (%s)", p.Name, schedulerReason(p)))
	}
	return fmt.Sprintf("%d of the job's pods were not scheduled within scheduleTimeoutSeconds (%ds): %s",
		len(unbound), *sp.ScheduleTimeoutSeconds, strings.Join(lines, "; ")), 0
}

// schedulerReason is what the scheduler said of an unbound pod: its PodScheduled
// condition's message, else that no scheduler has looked at it.
func schedulerReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			if c.Message != "" {
				return c.Message
			}
			if c.Reason != "" {
				return c.Reason
			}
		}
	}
	return "no scheduler has reported on it"
}
