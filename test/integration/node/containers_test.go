package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// TestTwoContainersShareAnEmptyDir: the first container writes what it sees (args,
// working directory, env from values, secrets, ConfigMaps and pod fields) to an
// emptyDir; the second prints it; both exit 0 and the pod succeeds.
func TestTwoContainersShareAnEmptyDir(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	ctx := context.Background()
	if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"token": []byte("s3cr3t")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"MODE": "train", "LR": "0.1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	pod := shPod("two", ns, "")
	pod.Spec.Volumes = []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers = []corev1.Container{
		{
			Name:       "writer",
			Image:      hostImage,
			Command:    []string{"sh", "-c", `{ echo "args=$*"; echo "pwd=$(pwd)"; env | grep -E '^(GREETING|TOKEN|MODE|CFG_|POD_)' | sort; } > /out/seen.tmp && mv /out/seen.tmp /out/seen`, "sh"},
			Args:       []string{"first", "$(GREETING)"},
			WorkingDir: "/out",
			Env: []corev1.EnvVar{
				{Name: "GREETING", Value: "hello"},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
				{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
				field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"), field("POD_IP", "status.podIP"),
			},
			EnvFrom:      []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}},
		},
		{
			Name:         "reader",
			Image:        hostImage,
			Command:      []string{"sh", "-c", "while [ ! -s /in/seen ]; do sleep 0.1; done; cat /in/seen"},
			VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/in", ReadOnly: true}},
		},
	}
	createPod(t, pod)
	done := waitPhase(t, ns, "two", corev1.PodSucceeded)

	podIP := done.Status.PodIP
	if !strings.HasPrefix(podIP, "10.250.0.") || podIP == testNodeIP {
		t.Errorf("pod IP %q, want one from %s", podIP, testCIDR)
	}
	want := []string{
		"args=first hello", "pwd=/out",
		"CFG_LR=0.1", "CFG_MODE=train", "GREETING=hello", "MODE=train",
		"POD_IP=" + podIP, "POD_NAME=two", "POD_NAMESPACE=" + ns, "TOKEN=s3cr3t",
	}
	got := logLines(podLogs(t, ns, "two", &corev1.PodLogOptions{Container: "reader"}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the writer saw (-want +got):\n%s", diff)
	}
	for _, name := range []string{"writer", "reader"} {
		s := containerStatus(done.Status.ContainerStatuses, name)
		if term := s.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" {
			t.Errorf("container %s: %+v, want terminated 0 Completed", name, s.State)
		}
		if !strings.HasPrefix(s.ContainerID, "runc://") {
			t.Errorf("container %s ID %q, want runc://…", name, s.ContainerID)
		}
	}
	if condition(done, corev1.PodReady) != corev1.ConditionFalse || condition(done, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("conditions of a succeeded pod: %s", describeStatus(done))
	}
}

// TestExitCodesAndPhases: a container exiting non-zero under restartPolicy Never fails
// the pod with its exit code; a missing command is a start error; a termination
// message is reported.
func TestExitCodesAndPhases(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	failing := shPod("fails", ns, "echo oops > /dev/termination-log; exit 3")
	createPod(t, failing)
	missing := shPod("missing", ns, "")
	missing.Spec.Containers[0].Command = []string{"/no/such/binary"}
	createPod(t, missing)

	p := waitPhase(t, ns, "fails", corev1.PodFailed)
	term := containerStatus(p.Status.ContainerStatuses, "main").State.Terminated
	if term == nil || term.ExitCode != 3 || term.Reason != "Error" || term.Message != "oops\n" {
		t.Errorf("terminated %+v, want exit 3, Error, message oops", term)
	}
	p = waitPhase(t, ns, "missing", corev1.PodFailed)
	term = containerStatus(p.Status.ContainerStatuses, "main").State.Terminated
	if term == nil || term.ExitCode != 128 || term.Reason != "StartError" || !strings.Contains(term.Message, "/no/such/binary") {
		t.Errorf("terminated %+v, want exit 128, StartError naming the binary", term)
	}
}

// TestOnFailureRestarts: a container that fails twice then succeeds restarts under
// OnFailure, with its restart count and last termination state, and the previous
// instance's log stays readable.
func TestOnFailureRestarts(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("retry", ns, `n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/n; echo "attempt $n"; [ $n -ge 3 ] || exit 7`)
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pod.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	createPod(t, pod)

	p := waitPhase(t, ns, "retry", corev1.PodSucceeded)
	s := containerStatus(p.Status.ContainerStatuses, "main")
	if s.RestartCount != 2 {
		t.Errorf("restart count %d, want 2", s.RestartCount)
	}
	if last := s.LastTerminationState.Terminated; last == nil || last.ExitCode != 7 || last.Reason != "Error" {
		t.Errorf("last termination %+v, want exit 7 Error", s.LastTerminationState)
	}
	if got := podLogs(t, ns, "retry", &corev1.PodLogOptions{Container: "main"}); got != "attempt 3\n" {
		t.Errorf("current log %q, want attempt 3", got)
	}
	if got := podLogs(t, ns, "retry", &corev1.PodLogOptions{Container: "main", Previous: true}); got != "attempt 2\n" {
		t.Errorf("previous log %q, want attempt 2", got)
	}
}

// TestRestartPolicyAlways: a container that exits 0 is restarted under Always and the
// pod keeps running.
func TestRestartPolicyAlways(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("always", ns, "sleep 0.2")
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	createPod(t, pod)
	p := waitPod(t, ns, "always", 30*time.Second, "restarted twice", func(p *corev1.Pod) bool {
		return containerStatus(p.Status.ContainerStatuses, "main").RestartCount >= 2
	})
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", p.Status.Phase)
	}
	last := containerStatus(p.Status.ContainerStatuses, "main").LastTerminationState.Terminated
	if last == nil || last.ExitCode != 0 || last.Reason != "Completed" {
		t.Errorf("last termination %+v, want exit 0 Completed", last)
	}
}

// TestOOMKilled: a container over its memory limit is killed and reported OOMKilled.
func TestOOMKilled(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("oom", ns, "")
	pod.Spec.Containers[0].Command = []string{"python3", "-c", "x = bytearray(512 * 1024 * 1024); print(len(x))"}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Mi")}
	createPod(t, pod)
	p := waitPhase(t, ns, "oom", corev1.PodFailed)
	term := containerStatus(p.Status.ContainerStatuses, "main").State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != "OOMKilled" {
		t.Errorf("terminated %+v, want exit 137 OOMKilled", term)
	}
}
