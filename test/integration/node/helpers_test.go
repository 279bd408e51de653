package node_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// leftovers lists what a stopped node left on the host: mounts under its state
// directory, its bridge, runc containers and processes, and the network namespaces,
// veths and cgroups of the given pods.
func leftovers(stateDir, bridge string, pods []types.UID) []string {
	var left []string
	if data, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], stateDir) {
				left = append(left, "mount "+f[4])
			}
		}
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		left = append(left, "bridge "+bridge)
	}
	ours := func(hexUID string) bool {
		for _, uid := range pods {
			if strings.HasPrefix(strings.ReplaceAll(string(uid), "-", ""), hexUID) {
				return true
			}
		}
		return false
	}
	if entries, err := os.ReadDir("/var/run/netns"); err == nil {
		for _, e := range entries {
			if id, ok := strings.CutPrefix(e.Name(), "tfk8s-"); ok && ours(id) {
				left = append(left, "netns "+e.Name())
			}
		}
	}
	if ifaces, err := net.Interfaces(); err == nil {
		for _, i := range ifaces {
			if id, ok := strings.CutPrefix(i.Name, "veth"); ok && len(i.Name) == 15 && ours(id) {
				left = append(left, "veth "+i.Name)
			}
		}
	}
	if out, err := exec.Command("runc", "--root", filepath.Join(stateDir, "runc"), "list", "-q").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		left = append(left, "runc containers "+strings.Join(strings.Fields(string(out)), ","))
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), stateDir) {
			left = append(left, "process "+strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	if entries, err := os.ReadDir("/sys/fs/cgroup/memory/tfk8s"); err == nil {
		for _, e := range entries {
			if e.IsDir() && ours(strings.ReplaceAll(e.Name(), "-", "")) {
				left = append(left, "cgroup memory/tfk8s/"+e.Name())
			}
		}
	}
	return left
}

// shPod is a pod for the test node whose container "main" runs script with sh. The
// node selector keeps it off the second node TestNodeShutdown runs.
func shPod(name, ns, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: nodeName},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name: "main", Image: hostImage, Command: []string{"sh", "-c", script},
			}},
		},
	}
}

// createdPods are the UIDs of every pod the tests created, whose network namespaces,
// veths and cgroups must all be gone at the end.
var createdPods struct {
	sync.Mutex
	uids []types.UID
}

// createPod creates pod and deletes it (at once) when the test ends.
func createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := clientset.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	createdPods.Lock()
	createdPods.uids = append(createdPods.uids, created.UID)
	createdPods.Unlock()
	t.Cleanup(func() {
		err := clientset.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s: %v", pod.Name, err)
		}
	})
	return created
}

// waitPod polls pod until cond holds, failing the test after timeout.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to be %s: %v; last status: %s", name, what, err, describeStatus(last))
	}
	return last
}

// waitPhase waits until the pod reaches phase.
func waitPhase(t *testing.T, ns, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	return waitPod(t, ns, name, time.Minute, string(phase), func(p *corev1.Pod) bool { return p.Status.Phase == phase })
}

// waitGone waits until the pod object is deleted and returns how long that took.
func waitGone(t *testing.T, ns, name string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to be deleted: %v", name, err)
	}
	return time.Since(start)
}

// podLogs reads a container's log through the API server, as kubectl logs does.
func podLogs(t *testing.T, ns, name string, opts *corev1.PodLogOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := clientset.CoreV1().Pods(ns).GetLogs(name, opts).Stream(ctx)
	if err != nil {
		t.Fatalf("streaming the logs of %s/%s: %v", name, opts.Container, err)
	}
	defer stream.Close()
	data, err := io.ReadAll(stream)
	if err != nil {
		t.Fatalf("reading the logs of %s/%s: %v", name, opts.Container, err)
	}
	return string(data)
}

// logLines returns the non-empty lines of a log.
func logLines(s string) []string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// containerStatus finds a container's status by name.
func containerStatus(statuses []corev1.ContainerStatus, name string) corev1.ContainerStatus {
	for _, s := range statuses {
		if s.Name == name {
			return s
		}
	}
	return corev1.ContainerStatus{}
}

// condition returns the status of a pod condition.
func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// describeStatus summarises a pod's status for failure messages.
func describeStatus(p *corev1.Pod) string {
	if p == nil {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%q node=%q conditions=[", p.Status.Phase, p.Status.Reason, p.Spec.NodeName)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	b.WriteString(" ]")
	for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " %s{restarts=%d ready=%t", s.Name, s.RestartCount, s.Ready)
		switch {
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s: %s", s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Running != nil:
			b.WriteString(" running")
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, " terminated %d %s: %s", s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		}
		b.WriteString("}")
	}
	return b.String()
}

// writeFile writes content to path.
func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// unauthenticatedLogs asks the kubelet API for logs without a client certificate; it
// returns nil only if the node served them.
func unauthenticatedLogs(ns, pod string) error {
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the node's certificate is self-signed
	}}
	resp, err := httpClient.Get(fmt.Sprintf("https://%s:10250/containerLogs/%s/%s/main", testNodeIP, ns, pod))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}
