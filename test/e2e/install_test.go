package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// The installs' clusters have their own network, apart from the other tests'; the two
// tests run one after the other, on the same one.
const (
	installBridge  = "tfk8se2e3"
	installPodCIDR = "10.243.0.0/24"
	// controllerSA is the ServiceAccount both installs run the controller as.
	controllerSA = "tfk8s-controller"
)

// TestInstallHelm installs tfk8s into a local cluster with Helm, from the images make
// images built, and uses it as a team would: a distributed job succeeds with the
// controller running as its ServiceAccount under the chart's RBAC (its log has no
// "forbidden"), the leader's pod is killed and the other replica takes over while a
// job submitted meanwhile still succeeds, and helm uninstall leaves only the CRDs.
func TestInstallHelm(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, opts := upInstalled(ctx, t, localcluster.InstallHelm)

	t.Run("status shows the controller's pods", func(t *testing.T) { checkInstallStatus(t, opts) })
	t.Run("a distributed job succeeds", func(t *testing.T) { checkInstalledJob(ctx, t, c, "first") })
	t.Run("no forbidden in the controller's log", func(t *testing.T) { checkNoForbidden(ctx, t, c) })
	t.Run("controller memory at idle", func(t *testing.T) { logControllerMemory(ctx, t, c) })
	t.Run("another replica takes over from a killed leader", func(t *testing.T) { checkFailover(ctx, t, c) })
	t.Run("no forbidden after the failover", func(t *testing.T) { checkNoForbidden(ctx, t, c) })
	t.Run("in-cluster dashboard shows a user only their namespace", func(t *testing.T) { checkInstalledDashboard(ctx, t, c, opts) })
	t.Run("helm uninstall leaves only the CRDs", func(t *testing.T) { checkHelmUninstall(ctx, t, c, opts) })
}

// TestInstallKustomize installs tfk8s with kustomize build config/default applied
// server-side: a distributed job succeeds and the controller's log has no "forbidden".
func TestInstallKustomize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c, opts := upInstalled(ctx, t, localcluster.InstallKustomize)

	t.Run("status shows the controller's pods", func(t *testing.T) { checkInstallStatus(t, opts) })
	t.Run("a distributed job succeeds", func(t *testing.T) { checkInstalledJob(ctx, t, c, "first") })
	t.Run("no forbidden in the controller's log", func(t *testing.T) { checkNoForbidden(ctx, t, c) })
}

// upInstalled brings up a cluster of its own with tfk8s installed by method, and
// checks that the controller's pods run as its ServiceAccount.
func upInstalled(ctx context.Context, t *testing.T, method string) (*jobsCluster, localcluster.Options) {
	t.Helper()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{filepath.Join(binDir, "tfk8s-nodeinit"), filepath.Join(binDir, method),
		filepath.Join(binDir, "..", "_out", "images", "tfk8s-controller", "index.json")} {
		if !fileExists(need) {
			t.Fatalf("no %s: make build install-tools images", need)
		}
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-install-node",
		PodCIDR:  installPodCIDR,
		Bridge:   installBridge,
		Install:  method,
	}, func() {
		if left := leftNetwork(installBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	for _, p := range controllerPods(ctx, t, c) {
		if p.Spec.ServiceAccountName != controllerSA {
			t.Errorf("pod %s runs as ServiceAccount %q, want %s", p.Name, p.Spec.ServiceAccountName, controllerSA)
		}
	}
	return c, opts
}

// checkInstallStatus wants local status to name the install and two ready pods, one
// of them the leader.
func checkInstallStatus(t *testing.T, opts localcluster.Options) {
	st, err := localcluster.StatusOf(opts)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	st.Print(&out)
	t.Logf("local status:\n%s", out.String())
	in := st.Install
	if in == nil || in.Err != nil || len(in.Pods) != 2 || in.Leader == "" {
		t.Fatalf("status of the install: %+v, want 2 pods and a leader", in)
	}
	for _, p := range in.Pods {
		if !p.Ready {
			t.Errorf("pod %s not ready: %s", p.Name, p.State)
		}
	}
	if want := "installed with " + opts.Install + " in namespace " + localcluster.InstallNamespace; !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q", want)
	}
	for _, c := range st.Components {
		if c.Name == "tfk8s-controller" {
			t.Errorf("status lists a tfk8s-controller process beside the installed one")
		}
	}
}

// submitJob submits the trainer with 1 PS, 2 workers and a chief, following it, and
// returns when submit returns.
func submitJob(ctx context.Context, c *jobsCluster, name string) cliResult {
	return c.tfk8s(ctx, "submit", "../../examples/trainer", "--name", name, "--image", jobsImage,
		"--ps", "1", "--workers", "2", "--chief", "--follow",
		"--", "python3", "trainer.py", "--steps", "200")
}

// checkInstalledJob runs a distributed job to success.
func checkInstalledJob(ctx context.Context, t *testing.T, c *jobsCluster, name string) {
	start := time.Now()
	if r := submitJob(ctx, c, name); r.code != 0 {
		c.fail(t, "submit --follow %s: %s", name, r)
	}
	if job := c.job(ctx, t, name); job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "%s state %s, want Succeeded: %+v", name, job.Status.State, job.Status.Conditions)
	}
	t.Logf("%s (1 PS, 2 workers, chief) succeeded %.1f s after submit", name, time.Since(start).Seconds())
}

// controllerPods lists the controller's live pods.
func controllerPods(ctx context.Context, t *testing.T, c *jobsCluster) []corev1.Pod {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(localcluster.InstallNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=tfk8s,app.kubernetes.io/component=controller"})
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// checkNoForbidden reads every controller pod's log through the API server: the
// chart's RBAC must allow all the controller does.
func checkNoForbidden(ctx context.Context, t *testing.T, c *jobsCluster) {
	for _, p := range controllerPods(ctx, t, c) {
		logs, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("reading the log of %s: %v", p.Name, err)
		}
		for line := range strings.Lines(string(logs)) {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				t.Errorf("%s: %s", p.Name, line)
			}
		}
		t.Logf("%s: %d log lines, none forbidden", p.Name, strings.Count(string(logs), "\n"))
	}
}

// logControllerMemory reports each controller pod's resident memory with no job
// running: the RSS of the controller process found by the pod's cgroup.
func logControllerMemory(ctx context.Context, t *testing.T, c *jobsCluster) {
	for _, p := range controllerPods(ctx, t, c) {
		rss, err := podProcessRSS(string(p.UID), "tfk8s-controller")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("controller memory at idle: pod %s, RSS %.1f MiB", p.Name, float64(rss)/(1<<20))
	}
}

// podProcessRSS is the resident set size, in bytes, of the one process of the pod
// (by its cgroup) whose program is named program.
func podProcessRSS(podUID, program string) (int64, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		cgroup, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil || !strings.Contains(string(cgroup), podUID) {
			continue
		}
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		if filepath.Base(exe) != program {
			continue
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, os.ErrNotExist
}

// checkFailover kills the leader's pod (grace period 0, as a crash), submits a job at
// once, and wants another pod to take the Lease, and the job to succeed.
func checkFailover(ctx context.Context, t *testing.T, c *jobsCluster) {
	leader := leaderPod(ctx, t, c, "")
	var other string
	for _, p := range controllerPods(ctx, t, c) {
		if p.Name != leader {
			other = p.Name
		}
	}
	killed := time.Now()
	err := c.cs.CoreV1().Pods(localcluster.InstallNamespace).Delete(ctx, leader, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil {
		t.Fatalf("killing the leader's pod %s: %v", leader, err)
	}
	t.Logf("killed the leader's pod %s; the other replica is %s", leader, other)
	submitted := make(chan cliResult, 1)
	go func() { submitted <- submitJob(ctx, c, "meanwhile") }()
	next := leaderPod(ctx, t, c, leader)
	t.Logf("failover: leader pod deleted → new Lease holder %s: %.1f s", next, time.Since(killed).Seconds())
	// The standby and the pod the Deployment starts in the killed one's place race for
	// the expired Lease; either may win, never the killed pod (leaderPod waits for
	// another holder).
	if next == other {
		t.Logf("the standby %s took over", next)
	} else {
		t.Logf("the replacement pod %s took over before the standby %s", next, other)
	}
	if r := <-submitted; r.code != 0 {
		c.fail(t, "submit --follow meanwhile: %s", r)
	}
	if job := c.job(ctx, t, "meanwhile"); job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "meanwhile state %s, want Succeeded", job.Status.State)
	}
	t.Logf("the job submitted meanwhile succeeded %.1f s after the kill", time.Since(killed).Seconds())
}

// leaderPod waits until a pod other than not holds the controller's Lease, and
// returns its name.
func leaderPod(ctx context.Context, t *testing.T, c *jobsCluster, not string) string {
	t.Helper()
	var leader string
	c.eventually(ctx, t, "a leader other than "+strconv.Quote(not), func() (bool, error) {
		var err error
		leader, err = localcluster.LeaderPod(ctx, c.cl)
		return err == nil && leader != "" && leader != not, err
	})
	return leader
}

// checkHelmUninstall uninstalls the release and wants every object of it gone, and
// of tfk8s only the CRD left (with the TFJobs), and in tfk8s-system, which Helm never
// deletes, the controller's leader Lease.
func checkHelmUninstall(ctx context.Context, t *testing.T, c *jobsCluster, opts localcluster.Options) {
	helm := filepath.Join(opts.BinDir, "helm")
	out, err := exec.CommandContext(ctx, helm, "uninstall", localcluster.ReleaseName, "--namespace", localcluster.InstallNamespace,
		"--kubeconfig", c.kubeconfig, "--wait", "--timeout", "2m").CombinedOutput()
	if err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	t.Logf("helm uninstall: %s", strings.TrimSpace(string(out)))
	// Local mode installs with kubeflow.enabled, whose CRD the chart keeps too, so that
	// uninstalling deletes no kubeflow.org TFJob.
	want := []string{
		"CustomResourceDefinition " + localcluster.KubeflowCRD,
		"CustomResourceDefinition tfjobs.tfk8s.io",
		"Lease tfk8s-system/" + localcluster.ControllerLease,
	}
	var left []string
	c.eventually(ctx, t, "only the CRDs and the Lease left", func() (bool, error) {
		var err error
		left, err = tfk8sObjects(ctx, c.cl)
		return slices.Equal(left, want), err
	})
	var jobs tfv1.TFJobList
	if err := c.cl.List(ctx, &jobs, client.InNamespace("default")); err != nil || len(jobs.Items) == 0 {
		t.Errorf("TFJobs after uninstall: %d, %v; want them kept with the CRD", len(jobs.Items), err)
	}
}

// installedKinds are the kinds an install of tfk8s creates, and the Lease its
// controller makes.
var installedKinds = []schema.GroupVersionKind{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	{Version: "v1", Kind: "Pod"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
}

// tfk8sObjects names, sorted, every object of installedKinds that an install made:
// cluster-wide, or in tfk8s-system (not the users' own, such as their jobs' S3
// Secrets), whose name says tfk8s or whose label app.kubernetes.io/part-of does.
func tfk8sObjects(ctx context.Context, cl client.Client) ([]string, error) {
	var found []string
	for _, gvk := range installedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := cl.List(ctx, list, client.InNamespace(localcluster.InstallNamespace)); err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			if strings.Contains(o.GetName(), "tfk8s") || o.GetLabels()["app.kubernetes.io/part-of"] == "tfk8s" {
				found = append(found, gvk.Kind+" "+strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"))
			}
		}
	}
	slices.Sort(found)
	return found, nil
}
