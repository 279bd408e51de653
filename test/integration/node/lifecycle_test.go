package node_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// readLines returns the lines of a file, nil if it does not exist.
func readLines(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return logLines(string(data))
}

// TestDeletion: deleting a pod runs its preStop hook, then SIGTERM, which the process
// traps; the pod object goes as soon as its containers are gone. A process that ignores
// SIGTERM is killed when the grace period ends.
func TestDeletion(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	shared := t.TempDir()
	withShared := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: shared}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
		return p
	}
	graceful := withShared(shPod("graceful", ns, `trap 'echo term >> /shared/events; exit 0' TERM
echo started >> /shared/events
while true; do sleep 0.1; done`))
	graceful.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	graceful.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo poststart > /shared/poststart"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo prestop >> /shared/events"}}},
	}
	createPod(t, graceful)
	stubborn := withShared(shPod("stubborn", ns, `trap '' TERM; echo started > /shared/stubborn; while true; do sleep 0.1; done`))
	stubborn.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	createPod(t, stubborn)

	ctx := context.Background()
	waitPod(t, ns, "graceful", 30*time.Second, "running", func(p *corev1.Pod) bool {
		return containerStatus(p.Status.ContainerStatuses, "main").State.Running != nil
	})
	// The container is Running only once its postStart hook has run.
	if got := readLines(filepath.Join(shared, "poststart")); !slices.Equal(got, []string{"poststart"}) {
		t.Errorf("postStart hook wrote %q", got)
	}
	waitPod(t, ns, "graceful", 30*time.Second, "started", func(*corev1.Pod) bool {
		return slices.Contains(readLines(filepath.Join(shared, "events")), "started")
	})
	if err := clientset.CoreV1().Pods(ns).Delete(ctx, "graceful", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if took := waitGone(t, ns, "graceful", 20*time.Second); took > 10*time.Second {
		t.Errorf("a pod that exits on SIGTERM took %s to go, want well within its 30s grace period", took)
	}
	if got, want := readLines(filepath.Join(shared, "events")), []string{"started", "prestop", "term"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	waitPod(t, ns, "stubborn", 30*time.Second, "started", func(*corev1.Pod) bool { return len(readLines(filepath.Join(shared, "stubborn"))) > 0 })
	if err := clientset.CoreV1().Pods(ns).Delete(ctx, "stubborn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if took := waitGone(t, ns, "stubborn", 20*time.Second); took < 1500*time.Millisecond {
		t.Errorf("a pod ignoring SIGTERM went after %s, want after its 2s grace period", took)
	}
}

// TestReadinessProbes: exec, HTTP and TCP readiness probes drive the containers' and
// the pod's Ready; an exec probe that starts failing turns the pod unready again.
func TestReadinessProbes(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	probe := func(h corev1.ProbeHandler) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}
	}
	pod := shPod("probes", ns, "sleep 3; touch /tmp/ready; sleep 4; rm /tmp/ready; sleep 600")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"touch", "/tmp/poststart"},
	}}}
	pod.Spec.Containers[0].ReadinessProbe = probe(corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", "test -f /tmp/ready && test -f /tmp/poststart"},
	}})
	pod.Spec.Containers = append(pod.Spec.Containers,
		corev1.Container{
			Name: "http", Image: hostImage,
			Command:        []string{"python3", "-c", "import time, http.server; time.sleep(2); http.server.HTTPServer(('', 8080), http.server.SimpleHTTPRequestHandler).serve_forever()"},
			WorkingDir:     "/tmp",
			Ports:          []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
			ReadinessProbe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("web")}}),
		},
		corev1.Container{
			Name: "tcp", Image: hostImage,
			Command:        []string{"python3", "-c", "import socket, time; time.sleep(2); s = socket.socket(); s.bind(('', 9090)); s.listen(); time.sleep(600)"},
			ReadinessProbe: probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}}),
		},
	)
	createPod(t, pod)
	running := waitPhase(t, ns, "probes", corev1.PodRunning)
	if got := condition(running, corev1.PodReady); got == corev1.ConditionTrue {
		t.Errorf("Ready %s as soon as Running, want False until the probes pass", got)
	}
	ready := waitPod(t, ns, "probes", 30*time.Second, "Ready", func(p *corev1.Pod) bool { return condition(p, corev1.PodReady) == corev1.ConditionTrue })
	for _, s := range ready.Status.ContainerStatuses {
		if !s.Ready {
			t.Errorf("container %s not ready in a Ready pod", s.Name)
		}
	}
	unready := waitPod(t, ns, "probes", 30*time.Second, "unready again", func(p *corev1.Pod) bool { return condition(p, corev1.PodReady) == corev1.ConditionFalse })
	if s := containerStatus(unready.Status.ContainerStatuses, "main"); s.Ready {
		t.Errorf("main still ready after its probe failed: %s", describeStatus(unready))
	}
	if s := containerStatus(unready.Status.ContainerStatuses, "http"); !s.Ready {
		t.Errorf("http unready though its probe passes: %s", describeStatus(unready))
	}
}

// TestLivenessProbe: a container whose liveness probe fails is killed and restarted.
func TestLivenessProbe(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("liveness", ns, "touch /tmp/alive; sleep 1; rm /tmp/alive; sleep 600")
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/alive"}}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
	}
	createPod(t, pod)
	p := waitPod(t, ns, "liveness", 30*time.Second, "restarted", func(p *corev1.Pod) bool {
		return containerStatus(p.Status.ContainerStatuses, "main").RestartCount >= 1
	})
	last := containerStatus(p.Status.ContainerStatuses, "main").LastTerminationState.Terminated
	if last == nil || (last.ExitCode != 137 && last.ExitCode != 143) {
		t.Errorf("last termination %+v, want killed", last)
	}
}

// TestLogs: container output reaches `kubectl logs` through the API server, followed
// until the container exits, with tailLines, timestamps and limitBytes; the kubelet API
// refuses clients without the API server's certificate.
func TestLogs(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	createPod(t, shPod("logger", ns, "for i in 1 2 3 4 5; do echo line $i; sleep 0.3; done; echo to-stderr >&2"))
	waitPod(t, ns, "logger", 30*time.Second, "started", func(p *corev1.Pod) bool {
		return containerStatus(p.Status.ContainerStatuses, "main").State.Running != nil
	})
	start := time.Now()
	followed := podLogs(t, ns, "logger", &corev1.PodLogOptions{Follow: true})
	want := "line 1\nline 2\nline 3\nline 4\nline 5\nto-stderr\n"
	if followed != want {
		t.Errorf("followed %q, want %q", followed, want)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("follow ended after %s, before the container could have exited", took)
	}
	waitPhase(t, ns, "logger", corev1.PodSucceeded)
	if got := podLogs(t, ns, "logger", &corev1.PodLogOptions{TailLines: ptr.To[int64](2)}); got != "line 5\nto-stderr\n" {
		t.Errorf("tail 2: %q", got)
	}
	if got := podLogs(t, ns, "logger", &corev1.PodLogOptions{LimitBytes: ptr.To[int64](7)}); got != "line 1\n" {
		t.Errorf("limit 7 bytes: %q", got)
	}
	for _, line := range logLines(podLogs(t, ns, "logger", &corev1.PodLogOptions{Timestamps: true})) {
		ts, rest, _ := strings.Cut(line, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.Contains(want, rest) {
			t.Errorf("timestamped line %q", line)
		}
	}
	if err := unauthenticatedLogs(ns, "logger"); err == nil {
		t.Error("the kubelet API served logs to a client without a certificate")
	}
}
