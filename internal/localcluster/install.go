package localcluster

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/tfjob"
	"github.com/tfk8s/tfk8s/internal/version"
)

// Install methods of Options.Install: how tfk8s gets into the cluster instead of
// running tfk8s-controller as a host process.
const (
	// InstallHelm runs bin/helm upgrade --install of charts/tfk8s.
	InstallHelm = "helm"
	// InstallKustomize applies bin/kustomize build config/kubeflow (config/default
	// and the kubeflow.org CRD) server-side.
	InstallKustomize = "kustomize"
)

// Where an install puts tfk8s: the namespace config/default names, and the Helm
// release's name.
const (
	InstallNamespace = tfjob.InstallNamespace
	ReleaseName      = "tfk8s"
	// ControllerDeployment is the controller's Deployment, in InstallNamespace.
	ControllerDeployment = tfjob.ControllerDeployment
	// ControllerLease is the leader election Lease the controller's replicas share.
	ControllerLease = "tfk8s-controller.tfk8s.io"
	// installFieldOwner is the field manager of the kustomize install's server-side
	// apply.
	installFieldOwner = "tfk8s-local"
	// controllerSelector selects the controller's pods in both installs.
	controllerSelector = "app.kubernetes.io/name=tfk8s,app.kubernetes.io/component=controller"
)

// checkInstall says what is wrong with Options.Install, naming the flag.
func checkInstall(method string) error {
	switch method {
	case "", InstallHelm, InstallKustomize:
		return nil
	}
	return fmt.Errorf("--install %q: want %s or %s", method, InstallHelm, InstallKustomize)
}

// installSource is what an install needs from the source tree around BinDir: the tool
// (bin/helm, bin/kustomize, built by make install-tools) and what it installs
// (charts/tfk8s, config/kubeflow): either serves kubeflow.org TFJobs, as local mode
// does without an install.
func installSource(opts Options) (tool, source string) {
	root := filepath.Dir(opts.BinDir)
	if opts.Install == InstallHelm {
		return filepath.Join(opts.BinDir, "helm"), filepath.Join(root, "charts", "tfk8s")
	}
	return filepath.Join(opts.BinDir, "kustomize"), filepath.Join(root, "config", "kubeflow")
}

// checkInstallSource wants the install's tool and source, saying how to get them.
func checkInstallSource(opts Options) error {
	if opts.Install == "" {
		return nil
	}
	tool, source := installSource(opts)
	if _, err := os.Stat(tool); err != nil {
		return fmt.Errorf("--install %s needs %s: run make install-tools", opts.Install, tool)
	}
	if _, err := os.Stat(source); err != nil {
		return fmt.Errorf("--install %s needs %s of the tfk8s source tree around %s", opts.Install, source, opts.BinDir)
	}
	return nil
}

// installController installs tfk8s into the cluster with Options.Install, from the
// images up pushed to the registry (the node pulls them through its mirror by their
// ghcr.io names), and waits until the controller's Deployment is Available.
func installController(ctx context.Context, l launcher, kubeconfig string, cfg *rest.Config) error {
	start := time.Now()
	var err error
	switch l.opts.Install {
	case InstallHelm:
		err = helmInstall(ctx, l.opts, kubeconfig, l.logf)
	case InstallKustomize:
		err = kustomizeInstall(ctx, l.opts, cfg, l.logf)
	}
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	if err := waitControllerAvailable(ctx, c, l.opts.Timeout); err != nil {
		return err
	}
	l.logf("tfk8s installed with %s in %s: deployment %s available (%.1f s)",
		l.opts.Install, InstallNamespace, ControllerDeployment, time.Since(start).Seconds())
	return nil
}

// helmInstall runs helm upgrade --install: a first up installs the release, a later
// one upgrades it to the chart and images of the source tree.
func helmInstall(ctx context.Context, opts Options, kubeconfig string, logf func(string, ...any)) error {
	helm, chart := installSource(opts)
	args := []string{
		"upgrade", "--install", ReleaseName, chart,
		"--namespace", InstallNamespace, "--create-namespace",
		// The CRD and policy of an earlier up without --install become the release's.
		"--take-ownership",
		"--kubeconfig", kubeconfig, "--kube-context", ContextName,
		"--set", "image.repository=" + version.Repository + "/tfk8s-controller",
		"--set", "image.tag=" + version.Version,
		"--set", "agentImage.repository=" + version.Repository + "/tfk8s-agent",
		"--set", "agentImage.tag=" + version.Version,
		"--set-json", fmt.Sprintf("extraArgs=[%q]", "--cluster-domain="+opts.ClusterDomain),
		"--set", "gangScheduler=" + gangScheduler,
		"--set", "kubeflow.enabled=true",
	}
	out, err := runTool(ctx, opts.Timeout, helm, args...)
	if err != nil {
		return fmt.Errorf("installing tfk8s with helm: %w", err)
	}
	logf("helm upgrade --install %s %s: %s", ReleaseName, chart, firstLine(out))
	return nil
}

// kustomizeInstall builds config/default with kustomize and applies the objects
// server-side, as kubectl apply --server-side -k does: namespaces and CRDs first.
func kustomizeInstall(ctx context.Context, opts Options, cfg *rest.Config, logf func(string, ...any)) error {
	kustomize, dir := installSource(opts)
	out, err := runTool(ctx, opts.Timeout, kustomize, "build", dir)
	if err != nil {
		return fmt.Errorf("building %s with kustomize: %w", dir, err)
	}
	objs, err := manifests.Decode(out)
	if err != nil {
		return fmt.Errorf("reading kustomize build %s: %w", dir, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	if err := applyObjects(ctx, c, objs); err != nil {
		return err
	}
	logf("kustomize build %s: %d objects applied server-side", dir, len(objs))
	return nil
}

// runTool runs bin/helm or bin/kustomize within timeout and returns its output; a
// failure carries the tool's own words.
func runTool(ctx context.Context, timeout time.Duration, tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(tool), args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// firstLine is s's first non-empty line.
func firstLine(s []byte) string {
	for line := range strings.Lines(string(s)) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// applyObjects applies objs server-side, namespaces and CRDs first, taking the fields
// another manager set (an earlier install) as a re-install does.
func applyObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(applyRank(a), applyRank(b))
	})
	for _, o := range objs {
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner(installFieldOwner), client.ForceOwnership)
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/"), err)
		}
	}
	return nil
}

// applyRank puts what the other objects need first: namespaces and CRDs.
func applyRank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "Namespace", "CustomResourceDefinition":
		return 0
	}
	return 1
}

// waitControllerAvailable polls until the controller's Deployment is Available with
// every replica of its latest generation ready; on timeout the error says what its
// pods are doing.
func waitControllerAvailable(ctx context.Context, c client.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key := client.ObjectKey{Namespace: InstallNamespace, Name: ControllerDeployment}
	for {
		d := &appsv1.Deployment{}
		err := c.Get(ctx, key, d)
		if err == nil && deploymentAvailable(d) {
			return nil
		}
		select {
		case <-ctx.Done():
			pods, _ := controllerPods(context.WithoutCancel(ctx), c)
			return fmt.Errorf("waiting for deployment %s/%s to be available: %w (last: %v); its pods: %s",
				InstallNamespace, ControllerDeployment, ctx.Err(), cmp.Or(err, errors.New(deploymentState(d))), describePods(pods))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// deploymentAvailable reports whether d's latest generation is rolled out and
// Available.
func deploymentAvailable(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want ||
		d.Status.ReadyReplicas != want || d.Status.Replicas != want {
		return false
	}
	for _, cond := range d.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deploymentState says how far d is.
func deploymentState(d *appsv1.Deployment) string {
	return fmt.Sprintf("%d replicas, %d updated, %d ready", d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas)
}

// controllerPods lists the controller's pods.
func controllerPods(ctx context.Context, c client.Client) ([]corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sel, err := labels.Parse(controllerSelector)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.InNamespace(InstallNamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the controller's pods: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int { return cmp.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// describePods says, for an error, what each pod is doing.
func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range pods {
		parts = append(parts, p.Name+" "+podState(&p))
	}
	return strings.Join(parts, "; ")
}

// podState is a pod's phase, or the reason its container waits or last ended.
func podState(p *corev1.Pod) string {
	state := string(p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			state += " (" + cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message + ")"
		case cs.State.Terminated != nil:
			state += fmt.Sprintf(" (%s, exit code %d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		case !cs.Ready:
			state += " (not ready)"
		}
	}
	if p.DeletionTimestamp != nil {
		state += " (terminating)"
	}
	return state
}
