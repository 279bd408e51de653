package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// storedJob is a job that stores in S3, with credentials from its Secret.
func storedJob() *tfv1.TFJob {
	job := testutil.MakeTFJob("mnist", "ml").Workers(1).Artifacts("s3://bkt/runs", "/logs").UID("0f3a9c2e-1b4d-4e5f-8a6b-7c8d9e0f1a2b").Obj()
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "mnist-storage"}}
	return job
}

// TestDecideRecord: a finished job that stores in S3 gets a record pod, and its TTL
// waits until the pod succeeded or was given up on; then the pod goes.
func TestDecideRecord(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	finished := func(extra ...metav1.Condition) *tfv1.TFJobStatus {
		st := &tfv1.TFJobStatus{Conditions: append([]metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue}}, extra...)}
		return st
	}
	pod := func(phase corev1.PodPhase, age time.Duration, restarts int32, exit int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mnist-record", CreationTimestamp: metav1.NewTime(now.Add(-age))}, Status: corev1.PodStatus{Phase: phase}}
		cs := corev1.ContainerStatus{Name: "record", RestartCount: restarts}
		if exit != 0 {
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: exit}
		} else {
			cs.State.Running = &corev1.ContainerStateRunning{}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	noSecret := func(age time.Duration) *corev1.Pod {
		p := pod(corev1.PodPending, age, 0, 0)
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: `secret "mnist-storage" not found`}}
		return p
	}
	recorded := metav1.Condition{Type: string(tfv1.JobEndRecorded), Status: metav1.ConditionTrue}
	type want struct {
		create, remove, hold bool
		condition            metav1.ConditionStatus
	}
	running := pod(corev1.PodRunning, time.Minute, 0, 0)
	for _, tc := range []struct {
		name string
		job  *tfv1.TFJob
		st   *tfv1.TFJobStatus
		pod  *corev1.Pod
		want want
	}{
		{"running job", storedJob(), &tfv1.TFJobStatus{}, nil, want{}},
		{"no storage", testutil.MakeTFJob("mnist", "ml").Workers(1).Obj(), finished(), nil, want{}},
		{"finished: the pod is started", storedJob(), finished(), nil, want{create: true, hold: true}},
		{"the pod runs: the TTL waits", storedJob(), finished(), running, want{hold: true}},
		{"the pod failed once: it restarts", storedJob(), finished(), pod(corev1.PodRunning, time.Minute, 1, 1), want{hold: true}},
		{"the pod succeeded", storedJob(), finished(), pod(corev1.PodSucceeded, time.Minute, 0, 0), want{remove: true, condition: metav1.ConditionTrue}},
		{"the pod failed its tries", storedJob(), finished(), pod(corev1.PodRunning, time.Minute, maxRecordRestarts, 1), want{remove: true, condition: metav1.ConditionFalse}},
		{"the pod never ran in time", storedJob(), finished(), pod(corev1.PodPending, recordTimeout, 0, 0), want{remove: true, condition: metav1.ConditionFalse}},
		{"its Secret is missing: the TTL waits a moment", storedJob(), finished(), noSecret(recordConfigGrace / 2), want{hold: true}},
		{"its Secret stays missing: given up", storedJob(), finished(), noSecret(recordConfigGrace), want{remove: true, condition: metav1.ConditionFalse}},
		{"recorded: the pod goes", storedJob(), finished(recorded), running, want{remove: true}},
		{"recorded, no pod", storedJob(), finished(recorded), nil, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := decideRecord(tc.job, tc.st, tc.pod, now)
			got := want{create: rp.create, remove: rp.remove != nil, hold: rp.hold}
			if rp.condition != nil {
				got.condition = rp.condition.Status
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("decideRecord (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideRecordMissingSecret: a record pod that cannot start for want of its
// Secret is given up on after recordConfigGrace, not recordTimeout, and the condition
// says why in the kubelet's words; before that, the job is looked at again when the
// grace ends.
func TestDecideRecordMissingSecret(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	st := &tfv1.TFJobStatus{Conditions: []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mnist-record", CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Second))},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "record",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "mnist-storage" not found`}}}}}}
	if rp := decideRecord(storedJob(), st, pod, now); rp.condition != nil || rp.requeue != recordConfigGrace-10*time.Second {
		t.Errorf("10 s in: condition %v, requeue %v; want none, and a look again in %v", rp.condition, rp.requeue, recordConfigGrace-10*time.Second)
	}
	rp := decideRecord(storedJob(), st, pod, now.Add(recordConfigGrace))
	want := `the run's end was not recorded: pod mnist-record cannot start: secret "mnist-storage" not found`
	if rp.condition == nil || rp.condition.Message != want {
		t.Errorf("after the grace: condition %+v, want the message %q", rp.condition, want)
	}
}

// TestConstructRecordPod: the record pod runs the agent's record with the run and its
// end, reads the S3 credentials from the job's Secret, runs restricted, and is the job's.
func TestConstructRecordPod(t *testing.T) {
	job := storedJob()
	done := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	st := &tfv1.TFJobStatus{
		State:           tfv1.JobFailed,
		CompletionTime:  &done,
		Conditions:      []metav1.Condition{{Type: string(tfv1.JobFailed), Status: metav1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "worker 0 failed"}},
		ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {Failed: 1}},
	}
	pod := build.RecordPod(job, st, PodOptions{Agent: AgentOptions{Image: "registry/tfk8s-agent:dev"}})
	if pod.Name != "mnist-record" || !metav1.IsControlledBy(pod, job) || !isRecordPod(pod) || pod.Labels[tfv1.LabelJobName] != "mnist" {
		t.Errorf("pod %s, labels %v, owners %v", pod.Name, pod.Labels, pod.OwnerReferences)
	}
	c := pod.Spec.Containers[0]
	if c.Image != "registry/tfk8s-agent:dev" || !cmp.Equal(c.Command, []string{"tfk8s-agent", "record"}) {
		t.Errorf("container %s %v", c.Image, c.Command)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env[tfjob.EnvSecretAccessKey]; e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "mnist-storage" {
		t.Errorf("%s: %+v, want it from the Secret mnist-storage", tfjob.EnvSecretAccessKey, e)
	}
	if env[tfjob.EnvRun].Value != "0f3a9c2e" || env[tfjob.EnvArtifactsDestination].Value != "s3://bkt/runs" || env[tfjob.EnvJobName].Value != "mnist" {
		t.Errorf("env %v", env)
	}
	var end tfjob.RunEnd
	if err := json.Unmarshal([]byte(env[tfjob.EnvRunEnd].Value), &end); err != nil {
		t.Fatal(err)
	}
	wantEnd := tfjob.RunEnd{Completed: done.UTC(), State: "Failed", Reason: "BackoffLimitExceeded", Message: "worker 0 failed", Replicas: map[string]tfv1.ReplicaStatus{"Worker": {Failed: 1}}}
	if diff := cmp.Diff(wantEnd, end); diff != "" {
		t.Errorf("end (-want +got):\n%s", diff)
	}
	psc, sc := pod.Spec.SecurityContext, c.SecurityContext
	if !*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *sc.AllowPrivilegeEscalation ||
		!cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || *pod.Spec.AutomountServiceAccountToken {
		t.Errorf("not restricted: pod %+v, container %+v", psc, sc)
	}
}
