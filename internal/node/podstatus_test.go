package node

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(name string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}}
}

func backingOff(name string, lastCode int32) corev1.ContainerStatus {
	s := waiting(name)
	s.State.Waiting.Reason = ReasonCrashLoopBackOff
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: lastCode}
	return s
}

func statusPod(policy corev1.RestartPolicy, inits, containers int) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: policy}}
	for i := 0; i < inits; i++ {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "init" + string(rune('a'+i))})
	}
	for i := 0; i < containers; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + string(rune('a'+i))})
	}
	return pod
}

func TestPodPhase(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		snap podSnapshot
		want corev1.PodPhase
	}{
		{name: "creating", pod: statusPod("Always", 0, 1), snap: podSnapshot{Statuses: []corev1.ContainerStatus{waiting("ca")}}, want: corev1.PodPending},
		{name: "init running", pod: statusPod("Never", 1, 1), snap: podSnapshot{
			InitStatuses: []corev1.ContainerStatus{running("inita", false)}, Statuses: []corev1.ContainerStatus{waiting("ca")},
		}, want: corev1.PodPending},
		{name: "init failed, Never", pod: statusPod("Never", 1, 1), snap: podSnapshot{
			InitStatuses: []corev1.ContainerStatus{exited("inita", 1)}, Statuses: []corev1.ContainerStatus{waiting("ca")},
		}, want: corev1.PodFailed},
		{name: "init failed, OnFailure retries", pod: statusPod("OnFailure", 1, 1), snap: podSnapshot{
			InitStatuses: []corev1.ContainerStatus{backingOff("inita", 1)}, Statuses: []corev1.ContainerStatus{waiting("ca")},
		}, want: corev1.PodPending},
		{name: "one running one creating", pod: statusPod("Always", 0, 2), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{running("ca", true), waiting("cb")},
		}, want: corev1.PodPending},
		{name: "all running", pod: statusPod("Always", 1, 2), snap: podSnapshot{
			InitStatuses: []corev1.ContainerStatus{exited("inita", 0)},
			Statuses:     []corev1.ContainerStatus{running("ca", true), running("cb", false)},
		}, want: corev1.PodRunning},
		{name: "one exited 0 one running", pod: statusPod("Never", 0, 2), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{exited("ca", 0), running("cb", false)},
		}, want: corev1.PodRunning},
		{name: "all exited 0", pod: statusPod("Never", 0, 2), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{exited("ca", 0), exited("cb", 0)},
		}, want: corev1.PodSucceeded},
		{name: "one failed, Never", pod: statusPod("Never", 0, 2), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{exited("ca", 0), exited("cb", 2)},
		}, want: corev1.PodFailed},
		{name: "one failed, OnFailure restarts", pod: statusPod("OnFailure", 0, 2), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{exited("ca", 0), backingOff("cb", 2)},
		}, want: corev1.PodRunning},
		{name: "all exited 0, OnFailure", pod: statusPod("OnFailure", 0, 1), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{exited("ca", 0)},
		}, want: corev1.PodSucceeded},
		{name: "exited 0, Always restarts", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Statuses: []corev1.ContainerStatus{backingOff("ca", 0)},
		}, want: corev1.PodRunning},
		{name: "deleted and killed", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Stopped: true, Statuses: []corev1.ContainerStatus{exited("ca", 143)},
		}, want: corev1.PodFailed},
		{name: "deleted, exited 0 on SIGTERM", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Stopped: true, Statuses: []corev1.ContainerStatus{exited("ca", 0)},
		}, want: corev1.PodSucceeded},
		{name: "deleted, still stopping", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Stopped: true, Statuses: []corev1.ContainerStatus{running("ca", false)},
		}, want: corev1.PodRunning},
		{name: "failed outright", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Failed: true, Statuses: []corev1.ContainerStatus{waiting("ca")},
		}, want: corev1.PodFailed},
		// A terminal pod is deleted without grace: its agent must finish uploading first.
		{name: "node stopping, container still in its grace period", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Failed: true, Stopped: true, Statuses: []corev1.ContainerStatus{running("ca", false)},
		}, want: corev1.PodRunning},
		{name: "node stopping, container stopped", pod: statusPod("Always", 0, 1), snap: podSnapshot{
			Failed: true, Stopped: true, Statuses: []corev1.ContainerStatus{exited("ca", 0)},
		}, want: corev1.PodFailed},
		{name: "terminal phase sticks", pod: func() *corev1.Pod {
			p := statusPod("Always", 0, 1)
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(), snap: podSnapshot{Statuses: []corev1.ContainerStatus{running("ca", true)}}, want: corev1.PodSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(tc.pod, tc.snap); got != tc.want {
				t.Errorf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

func TestPodStatusConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	pod := statusPod("Always", 1, 2)
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0},
	}
	snap := podSnapshot{
		PodIP: "10.244.0.5", HostIP: "10.244.0.1", SandboxReady: true,
		InitStatuses: []corev1.ContainerStatus{exited("inita", 0)},
		Statuses:     []corev1.ContainerStatus{running("ca", true), running("cb", false)},
	}
	got := podStatus(pod, snap, t1)
	want := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: t1},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: ReasonContainersNotReady,
			Message: "containers with unready status: [cb]", LastTransitionTime: t1},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonContainersNotReady,
			Message: "containers with unready status: [cb]", LastTransitionTime: t1},
	}
	if diff := cmp.Diff(want, got.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Phase != corev1.PodRunning || got.PodIP != "10.244.0.5" || len(got.PodIPs) != 1 || got.HostIPs[0].IP != "10.244.0.1" {
		t.Errorf("phase %s podIP %s podIPs %v hostIPs %v", got.Phase, got.PodIP, got.PodIPs, got.HostIPs)
	}

	// All containers ready, but a readiness gate is not met.
	snap.Statuses[1].Ready = true
	got = podStatus(pod, snap, t1)
	ready := got.Conditions[len(got.Conditions)-1]
	if ready.Status != corev1.ConditionFalse || ready.Reason != ReasonReadinessGatesNotReady {
		t.Errorf("Ready %+v, want False for the readiness gate", ready)
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: "example.com/gate", Status: corev1.ConditionTrue})
	got = podStatus(pod, snap, t1)
	if ready := got.Conditions[len(got.Conditions)-1]; ready.Status != corev1.ConditionTrue || ready.LastTransitionTime != t0 {
		t.Errorf("Ready %+v, want True since t0", ready)
	}

	// Init pending.
	snap.InitStatuses = []corev1.ContainerStatus{running("inita", false)}
	got = podStatus(statusPod("Always", 1, 1), snap, t1)
	for _, c := range got.Conditions {
		if c.Type == corev1.PodInitialized && (c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [inita]") {
			t.Errorf("Initialized %+v", c)
		}
	}
}
