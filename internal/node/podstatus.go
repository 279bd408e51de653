package node

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons the node writes into pod and container statuses, the kubelet's words.
const (
	ReasonCompleted                  = "Completed"
	ReasonError                      = "Error"
	ReasonOOMKilled                  = "OOMKilled"
	ReasonStartError                 = "StartError"
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonContainerStatusUnknown     = "ContainerStatusUnknown"
	ReasonPodCompleted               = "PodCompleted"
	ReasonContainersNotReady         = "ContainersNotReady"
	ReasonContainersNotInitialized   = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady     = "ReadinessGatesNotReady"
	ReasonNodeShutdown               = "Terminated"
	ReasonUnexpectedAdmissionError   = "UnexpectedAdmissionError"
	ReasonSandboxFailed              = "FailedCreatePodSandBox"
)

// podSnapshot is what the node knows of a pod's sandbox and containers at one moment.
type podSnapshot struct {
	PodIP     string
	HostIP    string
	StartTime *metav1.Time
	// SandboxReady: the network namespace and volumes are set up.
	SandboxReady bool
	// InitStatuses and Statuses follow the order of the spec.
	InitStatuses []corev1.ContainerStatus
	Statuses     []corev1.ContainerStatus
	// Stopped: the pod is being deleted or the node is shutting down; no container
	// starts or restarts any more, so once all have exited the pod is finished.
	Stopped bool
	// Failed, with Reason and Message, fails the pod outright (admission or node
	// shutdown).
	Failed          bool
	Reason, Message string
}

// podStatus derives a pod's status from a snapshot, keeping the conditions the node
// does not own (PodScheduled, DisruptionTarget, readiness gates) and the transition
// time of every condition whose status did not change.
func podStatus(pod *corev1.Pod, snap podSnapshot, now metav1.Time) corev1.PodStatus {
	old := pod.Status
	st := corev1.PodStatus{
		Phase:                 podPhase(pod, snap),
		Reason:                snap.Reason,
		Message:               snap.Message,
		HostIP:                snap.HostIP,
		PodIP:                 snap.PodIP,
		StartTime:             snap.StartTime,
		InitContainerStatuses: snap.InitStatuses,
		ContainerStatuses:     snap.Statuses,
		QOSClass:              old.QOSClass,
		NominatedNodeName:     old.NominatedNodeName,
	}
	if snap.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: snap.HostIP}}
	}
	if snap.PodIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: snap.PodIP}}
	}

	initialized, pendingInit := initialized(pod, snap)
	ready, unready := containersReady(snap)
	cond := func(t corev1.PodConditionType, ok bool, reason, message string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: message}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		return c
	}
	var readyCond, containersReadyCond corev1.PodCondition
	switch {
	case st.Phase == corev1.PodSucceeded:
		containersReadyCond = cond(corev1.ContainersReady, false, ReasonPodCompleted, "")
		readyCond = cond(corev1.PodReady, false, ReasonPodCompleted, "")
	default:
		msg := ""
		if len(unready) > 0 {
			msg = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
		}
		containersReadyCond = cond(corev1.ContainersReady, ready, ReasonContainersNotReady, msg)
		readyCond = cond(corev1.PodReady, ready, ReasonContainersNotReady, msg)
		if missing := unreadyGates(pod); ready && len(missing) > 0 {
			readyCond = cond(corev1.PodReady, false, ReasonReadinessGatesNotReady,
				fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist or is not True", missing[0]))
		}
	}
	initMsg := ""
	if len(pendingInit) > 0 {
		initMsg = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInit, " "))
	}
	owned := []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, snap.SandboxReady, "", ""),
		cond(corev1.PodInitialized, initialized, ReasonContainersNotInitialized, initMsg),
		containersReadyCond,
		readyCond,
	}
	st.Conditions = mergeConditions(old.Conditions, owned, now)
	return st
}

// podPhase follows the kubelet: a terminal phase never changes; pending while init
// containers have not all succeeded (failed if one failed and none restarts); running
// while any container runs or will restart; else succeeded if every container exited
// 0, failed otherwise. A pod failed outright (the node stopping) is failed only once
// none of its containers runs: a terminal pod is deleted at once, without the grace
// period its containers are still using (the agent's last upload).
func podPhase(pod *corev1.Pod, snap podSnapshot) corev1.PodPhase {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return pod.Status.Phase
	}
	if snap.Failed && !anyRunning(snap.InitStatuses) && !anyRunning(snap.Statuses) {
		return corev1.PodFailed
	}
	restarts := pod.Spec.RestartPolicy != corev1.RestartPolicyNever && !snap.Stopped
	for _, s := range snap.InitStatuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 && !restarts {
			return corev1.PodFailed
		}
	}
	if done, _ := initialized(pod, snap); !done {
		if snap.Stopped && !anyRunning(snap.InitStatuses) {
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, s := range snap.Statuses {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case snap.Stopped && running == 0:
		if waiting == 0 && stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "":
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		default:
			return corev1.PodRunning
		}
	}
	return corev1.PodPending
}

// initialized reports whether every init container has exited 0, and lists those that
// have not.
func initialized(pod *corev1.Pod, snap podSnapshot) (bool, []string) {
	var pending []string
	for i, c := range pod.Spec.InitContainers {
		if i >= len(snap.InitStatuses) {
			pending = append(pending, c.Name)
			continue
		}
		if t := snap.InitStatuses[i].State.Terminated; t == nil || t.ExitCode != 0 {
			pending = append(pending, c.Name)
		}
	}
	return len(pending) == 0, pending
}

// containersReady reports whether every container is ready, listing those that are not.
func containersReady(snap podSnapshot) (bool, []string) {
	var unready []string
	for _, s := range snap.Statuses {
		if !s.Ready {
			unready = append(unready, s.Name)
		}
	}
	return len(unready) == 0 && len(snap.Statuses) > 0, unready
}

func anyRunning(statuses []corev1.ContainerStatus) bool {
	for _, s := range statuses {
		if s.State.Running != nil {
			return true
		}
	}
	return false
}

// unreadyGates lists the pod's readiness gates whose condition is not True.
func unreadyGates(pod *corev1.Pod) []string {
	var missing []string
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			missing = append(missing, string(g.ConditionType))
		}
	}
	return missing
}

// mergeConditions replaces the owned conditions in old, keeping the others, and keeps a
// condition's transition time while its status is unchanged.
func mergeConditions(old, owned []corev1.PodCondition, now metav1.Time) []corev1.PodCondition {
	byType := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range old {
		byType[c.Type] = c
	}
	isOwned := map[corev1.PodConditionType]bool{}
	for i := range owned {
		isOwned[owned[i].Type] = true
		owned[i].LastTransitionTime = now
		if prev, ok := byType[owned[i].Type]; ok && prev.Status == owned[i].Status {
			owned[i].LastTransitionTime = prev.LastTransitionTime
		}
	}
	var out []corev1.PodCondition
	for _, c := range old {
		if !isOwned[c.Type] {
			out = append(out, c)
		}
	}
	return append(out, owned...)
}
