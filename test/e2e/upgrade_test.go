package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The upgrade test's cluster has its own network, apart from the other tests'.
const (
	upgradeBridge  = "tfk8se2eu"
	upgradePodCIDR = "10.232.0.0/24"
	// upgradeFrom and upgradeTo are releases N−1 and N, both made from this tree. They
	// differ in their version stamp only: the images' tags and binaries, the chart's
	// version and appVersion. Their CRDs are the same. That is the least any upgrade
	// changes, and it replaces every controller pod.
	upgradeFrom = "v0.0.1-test"
	upgradeTo   = "v0.0.2-test"
	// upgradeGPUs are the node's fake GPUs: a long job holds one, so that a gang of two
	// one-GPU workers waits, all its pods unschedulable, until the long job ends.
	upgradeGPUs = 2
	// upgradeFieldOwner is the field manager of the CRD's server-side apply.
	upgradeFieldOwner = "tfk8s-e2e-upgrade"
)

// upgradeScript is every job's program: "hold" runs until SIGUSR1 (exit 0), or for
// 10 minutes at most (exit 3, failing the job); "done" exits at once.
const upgradeScript = `import signal, sys, time
if sys.argv[1] == "hold":
    signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))
    time.sleep(600)
    sys.exit(3)
`

// TestUpgrade makes releases N−1 and N of this tree into a registry it starts, installs
// N−1 with Helm from that registry, then upgrades to N, and rolls back to N−1, each time
// under a long job and a queued gang: the CRD first, server-side applied from the
// target chart (Helm never upgrades a chart's crds/), then helm upgrade or helm
// rollback. Each time the controller's pods run the target's image; no pod of the
// jobs is re-created; no condition is taken back; both jobs then finish Succeeded.
func TestUpgrade(t *testing.T) {
	testStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, need := range []string{"registry", "helm", "tfk8s-nodeinit"} {
		if !fileExists(filepath.Join(binDir, need)) {
			t.Fatalf("no %s: make build tools install-tools", filepath.Join(binDir, need))
		}
	}
	registry := startReleaseRegistry(ctx, t, filepath.Join(binDir, "registry")) + "/" + releaseRepo
	out := t.TempDir()
	for _, version := range []string{upgradeFrom, upgradeTo} {
		makeRelease(ctx, t, filepath.Dir(binDir), registry, version, out)
		// The registry has the images now; their layouts would only fill the disk.
		if err := os.RemoveAll(filepath.Join(out, version, "build")); err != nil {
			t.Fatal(err)
		}
	}

	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-upgrade-node",
		PodCIDR:  upgradePodCIDR,
		Bridge:   upgradeBridge,
		GPUs:     upgradeGPUs,
		Install:  localcluster.InstallHelm,
	}, func() {
		if left := leftNetwork(upgradeBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	u := &upgradeCluster{
		jobsCluster: newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir),
		helmBin:     filepath.Join(binDir, "helm"),
		registry:    registry,
	}
	// The node pulls through the cluster's registry, by repository path (see TestRelease).
	mirrorImages(ctx, t, registry, st.Registry+"/"+releaseRepo, registryAccount(t, opts.Dir), "tfk8s-controller:"+upgradeFrom, "tfk8s-controller:"+upgradeTo)

	// local up installed the tree's chart; N−1 replaces it as a fresh install.
	u.helm(ctx, t, "uninstall", localcluster.ReleaseName, "--wait", "--timeout", "2m")
	u.applyCRD(ctx, t, upgradeFrom)
	u.helm(ctx, t, append([]string{"install", localcluster.ReleaseName}, u.chartArgs(upgradeFrom)...)...)
	u.waitController(ctx, t, upgradeFrom)

	t.Run("upgrade to N keeps a long job and a queued gang", func(t *testing.T) {
		u.switchUnderJobs(ctx, t, "up", upgradeTo, func() {
			u.helm(ctx, t, append([]string{"upgrade", localcluster.ReleaseName}, u.chartArgs(upgradeTo)...)...)
		})
	})
	t.Run("rollback to N-1 keeps a long job and a queued gang", func(t *testing.T) {
		// Revision 1 is N−1's install, 2 the upgrade to N.
		u.switchUnderJobs(ctx, t, "back", upgradeFrom, func() {
			u.helm(ctx, t, "rollback", localcluster.ReleaseName, "1", "--wait", "--timeout", "3m")
		})
	})
	t.Logf("TestUpgrade: %.1f s from start to the last check", time.Since(testStart).Seconds())
}

// upgradeCluster is the test's cluster, the helm binary and the releases' registry.
type upgradeCluster struct {
	*jobsCluster
	helmBin, registry string
}

// chartArgs are helm install's or upgrade's arguments for the release of version: its
// chart from the registry and the values a user keeps in a file, given again on every
// upgrade, as helm upgrade resets the values it is not given.
func (u *upgradeCluster) chartArgs(version string) []string {
	return []string{"oci://" + u.registry + "/charts/tfk8s", "--version", strings.TrimPrefix(version, "v"), "--plain-http",
		"--set-json", fmt.Sprintf("extraArgs=[%q]", "--cluster-domain="+localcluster.DefaultClusterDomain),
		"--wait", "--timeout", "3m"}
}

// helm runs bin/helm in the install's namespace and returns its standard output
// (helm's notes, such as "Pulled: ...", go to its standard error).
func (u *upgradeCluster) helm(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	args = append(args, "--namespace", localcluster.InstallNamespace, "--kubeconfig", u.kubeconfig)
	start := time.Now()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, u.helmBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		u.fail(t, "helm %s: %v\n%s%s", strings.Join(args, " "), err, lastLines(stdout.String(), 20), stderr.String())
	}
	t.Logf("helm %s %s: %.1f s", args[0], strings.Join(args[1:min(4, len(args))], " "), time.Since(start).Seconds())
	return stdout.String()
}

// applyCRD applies the CRD of the release of version server-side, as
// helm show crds ... | kubectl apply --server-side --force-conflicts -f - does.
func (u *upgradeCluster) applyCRD(ctx context.Context, t *testing.T, version string) {
	t.Helper()
	out := u.helm(ctx, t, "show", "crds", "oci://"+u.registry+"/charts/tfk8s", "--version", strings.TrimPrefix(version, "v"), "--plain-http")
	objs, err := manifests.Decode([]byte(out))
	if err != nil || len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("helm show crds of %s: %d objects, %v; want the TFJob CRD:\n%s", version, len(objs), err, lastLines(out, 20))
	}
	err = u.cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(objs[0]), client.FieldOwner(upgradeFieldOwner), client.ForceOwnership)
	if err != nil {
		t.Fatalf("applying the CRD of %s: %v", version, err)
	}
}

// waitController waits until the controller's Deployment names the image of version,
// has rolled it out, every live controller pod runs it, and one of them holds the Lease.
func (u *upgradeCluster) waitController(ctx context.Context, t *testing.T, version string) {
	t.Helper()
	want := u.registry + "/tfk8s-controller:" + version
	var seen string
	u.eventually(ctx, t, "the controller to run "+want, func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := u.cl.Get(ctx, client.ObjectKey{Namespace: localcluster.InstallNamespace, Name: localcluster.ControllerDeployment}, d); err != nil {
			return false, err
		}
		pods := controllerPods(ctx, t, u.jobsCluster)
		leader, err := localcluster.LeaderPod(ctx, u.cl)
		seen = fmt.Sprintf("deployment image %s, %d/%d updated, %d ready; leader %q; pods:",
			d.Spec.Template.Spec.Containers[0].Image, d.Status.UpdatedReplicas, ptr.Deref(d.Spec.Replicas, 1), d.Status.ReadyReplicas, leader)
		done := d.Spec.Template.Spec.Containers[0].Image == want && d.Status.ObservedGeneration == d.Generation &&
			d.Status.UpdatedReplicas == ptr.Deref(d.Spec.Replicas, 1) && d.Status.ReadyReplicas == d.Status.UpdatedReplicas &&
			d.Status.Replicas == d.Status.UpdatedReplicas
		leads := false
		for _, p := range pods {
			seen += " " + p.Name + "=" + p.Spec.Containers[0].Image
			done = done && p.Spec.Containers[0].Image == want
			leads = leads || p.Name == leader
		}
		if !done || !leads {
			return false, errors.Join(errors.New(seen), err)
		}
		return true, nil
	})
	t.Logf("controller on %s: %s", version, seen)
}

// switchUnderJobs starts a long job and a queued gang, switches the release to
// version with switchRelease after applying that version's CRD, and checks that
// nothing of the jobs is lost: a job submitted after the switch succeeds under the
// new controller (by then it has reconciled the older jobs); no pod of any job is
// re-created; no condition of any job is taken back; then the long job and the gang
// both succeed, in the pods they had.
func (u *upgradeCluster) switchUnderJobs(ctx context.Context, t *testing.T, tag, version string, switchRelease func()) {
	long, queued, probe := "long-"+tag, "queued-"+tag, "probe-"+tag
	u.create(ctx, t, upgradeJob(long, "hold", 1, 1, false))
	if err := u.waitAllRunning(ctx, long, 1, 100*time.Millisecond, nil); err != nil {
		u.fail(t, "%v", err)
	}
	u.eventually(ctx, t, long+" Running", func() (bool, error) { return u.jobState(ctx, long) == tfv1.JobRunning, nil })
	u.create(ctx, t, upgradeJob(queued, "done", 2, 1, true))
	(&schedCluster{jobsCluster: u.jobsCluster}).waitGangRefused(ctx, t, queued, 2)
	t.Logf("%s runs on 1 of %d GPUs; the gang %s of 2 one-GPU workers waits, its 2 pods unschedulable", long, upgradeGPUs, queued)

	before := u.snapshot(ctx, t)
	start := time.Now()
	u.applyCRD(ctx, t, version)
	switchRelease()
	u.waitController(ctx, t, version)
	t.Logf("CRD applied, release switched to %s, every controller pod on it: %.1f s", version, time.Since(start).Seconds())

	u.create(ctx, t, upgradeJob(probe, "done", 1, 0, false))
	if job := u.waitFinished(ctx, t, probe); job.Status.State != tfv1.JobSucceeded {
		u.fail(t, "%s, submitted after the switch, state %s: %+v", probe, job.Status.State, job.Status.Conditions)
	}
	after := u.snapshot(ctx, t)
	recreated, takenBack := before.lostIn(after)
	for _, l := range append(recreated, takenBack...) {
		t.Error(l)
	}
	t.Logf("across the switch to %s: %d jobs and %d pods seen before; pods re-created %d, conditions taken back %d",
		version, len(before.conditions), len(before.pods), len(recreated), len(takenBack))

	pod := u.pod(ctx, t, long, "worker", 0)
	pid, err := programPID(string(pod.UID), "hold")
	if err != nil {
		u.fail(t, "%s's worker: %v", long, err)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatalf("signalling %s's worker (pid %d): %v", long, pid, err)
	}
	released := time.Now()
	for _, name := range []string{long, queued} {
		if job := u.waitFinished(ctx, t, name); job.Status.State != tfv1.JobSucceeded {
			u.fail(t, "%s state %s, want Succeeded: %+v", name, job.Status.State, job.Status.Conditions)
		}
	}
	t.Logf("%s released → %s and %s Succeeded: %.1f s", long, long, queued, time.Since(released).Seconds())
	finished := u.snapshot(ctx, t)
	for name, pods := range before.pods {
		if job := before.job[name]; (job == long || job == queued) && finished.pods[name] != pods {
			t.Errorf("pod %s of %s: UID %s before the switch, %q once the job finished", name, job, pods, finished.pods[name])
		}
	}
	for name, job := range finished.job {
		if _, ok := before.pods[name]; !ok && (job == long || job == queued) {
			t.Errorf("pod %s of %s was created after the switch", name, job)
		}
	}
}

// upgradeJob is a job of workers replicas running upgradeScript in mode, each with
// gpus fake GPUs; gang asks for the native gang scheduler. Its pods are kept when it
// finishes (cleanPodPolicy None), so that their UIDs can be compared with the ones
// before the switch; it succeeds once every worker has.
func upgradeJob(name, mode string, workers int32, gpus int64, gang bool) *tfv1.TFJob {
	container := corev1.Container{Name: "tensorflow", Image: images.Python, Command: []string{"python3", "-c", upgradeScript, mode}}
	if gpus > 0 {
		container.Resources.Limits = corev1.ResourceList{tfjob.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	job := &tfv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: tfv1.TFJobSpec{
			TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {
				Replicas: ptr.To(workers),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers:                    []corev1.Container{container},
				}},
			}},
			SuccessPolicy: ptr.To(tfv1.SuccessPolicyAllWorkers),
			RunPolicy:     tfv1.RunPolicy{CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyNone)},
		},
	}
	if gang {
		job.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative}
	}
	return job
}

// create creates the job.
func (u *upgradeCluster) create(ctx context.Context, t *testing.T, job *tfv1.TFJob) {
	t.Helper()
	if err := u.cl.Create(ctx, job); err != nil {
		t.Fatalf("creating tfjob %s: %v", job.Name, err)
	}
}

// jobsSnapshot is what a user sees of every job at one moment: each pod's UID and
// job, by pod name, and each job's conditions, by job name.
type jobsSnapshot struct {
	pods       map[string]types.UID
	job        map[string]string
	conditions map[string][]metav1.Condition
}

// snapshot reads every job and every pod of a job in namespace default.
func (u *upgradeCluster) snapshot(ctx context.Context, t *testing.T) jobsSnapshot {
	t.Helper()
	s := jobsSnapshot{pods: map[string]types.UID{}, job: map[string]string{}, conditions: map[string][]metav1.Condition{}}
	var jobs tfv1.TFJobList
	if err := u.cl.List(ctx, &jobs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		s.conditions[j.Name] = j.Status.Conditions
	}
	pods, err := u.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: tfv1.LabelJobName})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		s.pods[p.Name], s.job[p.Name] = p.UID, p.Labels[tfv1.LabelJobName]
	}
	return s
}

// lostIn compares the snapshot with a later one: the pods gone or re-created (same
// name, another UID), and the conditions gone or changed in status or
// lastTransitionTime.
func (s jobsSnapshot) lostIn(later jobsSnapshot) (recreated, takenBack []string) {
	for name, uid := range s.pods {
		if now, ok := later.pods[name]; !ok || now != uid {
			recreated = append(recreated, fmt.Sprintf("pod %s of %s: UID %s before, %q after", name, s.job[name], uid, now))
		}
	}
	for job, conds := range s.conditions {
		for _, c := range conds {
			i := slices.IndexFunc(later.conditions[job], func(n metav1.Condition) bool { return n.Type == c.Type })
			if i < 0 || later.conditions[job][i].Status != c.Status || !later.conditions[job][i].LastTransitionTime.Equal(&c.LastTransitionTime) {
				takenBack = append(takenBack, fmt.Sprintf("%s: condition %s=%s since %s before; after: %+v",
					job, c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), later.conditions[job]))
			}
		}
	}
	slices.Sort(recreated)
	slices.Sort(takenBack)
	return recreated, takenBack
}

// TestSnapshotLostIn proves that TestUpgrade's comparison can fail: it finds a pod
// re-created or gone and a condition removed or changed, and accepts a condition or a
// pod that only appeared.
func TestSnapshotLostIn(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	running := metav1.Condition{Type: string(tfv1.JobRunning), Status: metav1.ConditionTrue, LastTransitionTime: since}
	snap := func(pods map[string]types.UID, conds ...metav1.Condition) jobsSnapshot {
		job := map[string]string{}
		for name := range pods {
			job[name] = "long"
		}
		return jobsSnapshot{pods: pods, job: job, conditions: map[string][]metav1.Condition{"long": conds}}
	}
	before := snap(map[string]types.UID{"long-worker-0": "a", "long-worker-1": "b"}, running)
	for _, tc := range []struct {
		name                 string
		after                jobsSnapshot
		recreated, takenBack int
	}{
		{"nothing lost", snap(map[string]types.UID{"long-worker-0": "a", "long-worker-1": "b", "long-worker-2": "c"}, running,
			metav1.Condition{Type: string(tfv1.JobCreated), Status: metav1.ConditionTrue}), 0, 0},
		{"a pod re-created, another gone", snap(map[string]types.UID{"long-worker-0": "z"}, running), 2, 0},
		{"a condition gone", snap(map[string]types.UID{"long-worker-0": "a", "long-worker-1": "b"}), 0, 1},
		{"a condition's status changed", snap(map[string]types.UID{"long-worker-0": "a", "long-worker-1": "b"},
			metav1.Condition{Type: running.Type, Status: metav1.ConditionFalse, LastTransitionTime: since}), 0, 1},
		{"a condition's time changed", snap(map[string]types.UID{"long-worker-0": "a", "long-worker-1": "b"},
			metav1.Condition{Type: running.Type, Status: running.Status, LastTransitionTime: metav1.NewTime(since.Add(time.Second))}), 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recreated, takenBack := before.lostIn(tc.after)
			if len(recreated) != tc.recreated || len(takenBack) != tc.takenBack {
				t.Errorf("re-created %q, taken back %q; want %d and %d", recreated, takenBack, tc.recreated, tc.takenBack)
			}
		})
	}
}
