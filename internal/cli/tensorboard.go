//go:build !sdk

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/forward"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/tensorboard"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// tensorBoardFlags are the flags of tfk8s tensorboard; all but the forward's apply to
// a TensorBoard over runs.
type tensorBoardFlags struct {
	forwardFlags
	agentImage      string
	image           string
	ttl             time.Duration
	clusterEndpoint string
}

// runsOnlyFlags are the flags that a job's own TensorBoard, the controller's, ignores.
var runsOnlyFlags = []string{"agent-image", "image", "ttl", "s3-cluster-endpoint"}

func newTensorBoardCommand(o *rootOptions) *cobra.Command {
	var f tensorBoardFlags
	cmd := &cobra.Command{
		Use:   "tensorboard JOB | RUN [RUN...] [--port N] [--open]",
		Short: "Open TensorBoard on a job or on several runs: forward a local port to it through the API server, until Ctrl-C",
		Long: `Open TensorBoard: forward a local port to its pod through the API server (no Service
or Ingress needed), print the local URL and keep forwarding until Ctrl-C.

With one JOB that exists and was submitted with --tensorboard, it opens the job's own
TensorBoard, which the controller runs (one that exists without it is refused: name
its run, JOB/RUN, instead). A finished job's TensorBoard stays for
spec.tensorboard.ttlSecondsAfterFinished (1 h by default); opening it restarts that
time, and brings a deleted TensorBoard back, reading the job's summaries from S3, also
when its pods are gone.

Otherwise each argument is a run, as tfk8s runs lists them: JOB (its newest run) or
JOB/RUN, whether or not its TFJob still exists; at most 8. tfk8s tensorboard creates,
with your own rights, one pod in the namespace that mirrors each run's summaries from
S3 into the directory <job>-<run>, so that TensorBoard shows each run under that name,
and deletes the pod when it ends. The pod reads S3 with the storage Secret of the
runs' jobs, by reference, when they share one that still exists; otherwise (each job
the CLI submits has its own Secret, deleted with it) with a Secret of its own, made
from your S3 settings and deleted with the pod. It is named after its runs
(tensorboard-runs-<hash>), so opening the same runs again replaces it, and it ends by
itself after --ttl if tfk8s tensorboard could not delete it.`,
		Example: "  tfk8s tensorboard mnist --open\n  tfk8s tensorboard mnist --port 6006\n" +
			"  tfk8s tensorboard mnist/1a2b3c4d mnist/5e6f7a8b resnet --open",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.openTensorBoards(cmd, args, f)
		},
	}
	f.addFlags(cmd.Flags(), "the TensorBoard")
	fs := cmd.Flags()
	fs.StringVar(&f.agentImage, "agent-image", images.Agent, "over runs: image of the tfk8s-agent that mirrors their summaries")
	fs.StringVar(&f.image, "image", images.TensorFlow, "over runs: image of TensorBoard")
	fs.DurationVar(&f.ttl, "ttl", tensorboard.DefaultTTL, "over runs: how long the pod may live if tfk8s tensorboard cannot delete it")
	fs.StringVar(&f.clusterEndpoint, "s3-cluster-endpoint", "", "over runs: S3 endpoint as pods reach it, when not at --s3-endpoint and the runs share no Secret")
	return cmd
}

// openTensorBoards opens the job's own TensorBoard when the one name is a job that
// has one, else a TensorBoard over the named runs.
func (o *rootOptions) openTensorBoards(cmd *cobra.Command, names []string, f tensorBoardFlags) error {
	ctx := cmd.Context()
	if _, err := f.local(); err != nil {
		return err
	}
	if len(names) == 1 {
		job, err := o.tensorBoardJob(ctx, names[0])
		if err != nil {
			return err
		}
		if job != nil {
			for _, flag := range runsOnlyFlags {
				if cmd.Flags().Changed(flag) {
					return fmt.Errorf("--%s: job %s/%s has its own TensorBoard, which the controller runs; --%s applies to a TensorBoard over runs (JOB/RUN)",
						flag, job.Namespace, job.Name, flag)
				}
			}
			return o.openTensorBoard(ctx, job, f.forwardFlags)
		}
	}
	return o.openRunsTensorBoard(ctx, names, f)
}

// tensorBoardJob is the TFJob of that name if it exists and has a TensorBoard; nil
// when it is a run's name (JOB/RUN) or names no TFJob. A TFJob without TensorBoard is
// refused, as before runs, with the run to name instead.
func (o *rootOptions) tensorBoardJob(ctx context.Context, name string) (*tfv1.TFJob, error) {
	if err := jobs.RefuseKubeflowRef(name, "TensorBoard"); err != nil {
		return nil, err
	}
	if strings.Contains(name, "/") {
		return nil, nil
	}
	cs, err := o.clients()
	if err != nil {
		return nil, err
	}
	job, err := jobs.Get(ctx, cs.Client, cs.Namespace, name)
	var gone *jobs.NotFoundError
	switch {
	case errors.As(err, &gone):
		return nil, nil
	case err != nil:
		return nil, err
	case kubeflow.IsKubeflow(job):
		return nil, jobs.RefuseKubeflowExtras(job, "TensorBoard")
	case !jobs.TensorBoardEnabled(job):
		return nil, fmt.Errorf("job %s/%s has no TensorBoard (spec.tensorboard.enabled is false): submit it with --tensorboard, or open one over its run: tfk8s tensorboard %s/%s",
			job.Namespace, job.Name, job.Name, tfjob.RunID(string(job.UID)))
	}
	return job, nil
}

// openTensorBoard asks the controller to keep (or bring back) the job's TensorBoard,
// waits for its pod, forwards a local port to it, prints the URL, and blocks until ctx
// ends (Ctrl-C) or the forward is lost for good.
func (o *rootOptions) openTensorBoard(ctx context.Context, job *tfv1.TFJob, f forwardFlags) error {
	cs, err := o.clients()
	if err != nil {
		return err
	}
	if err := jobs.RequestTensorBoard(ctx, cs.Client, job, time.Now()); err != nil {
		return err
	}
	deploy, err := tensorBoardDeployment(ctx, cs, job, f.timeout)
	if err != nil {
		return err
	}
	selector := labels.SelectorFromSet(labels.Set{tfv1.LabelTensorBoard: job.Name}).String()
	pod, err := forward.ReadyPod(ctx, cs.Kube, job.Namespace, selector, forward.DeploymentOwner(deploy), f.timeout, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("waiting for the TensorBoard of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	title := fmt.Sprintf("TensorBoard of job %s/%s", job.Namespace, job.Name)
	return o.serveForward(ctx, f, pod, tfjob.TensorBoardPort, title, tensorBoardURL)
}

// openRunsTensorBoard finds the runs in S3, creates (or replaces) the pod of their
// TensorBoard, forwards a local port to it until ctx ends, and then deletes it.
func (o *rootOptions) openRunsTensorBoard(ctx context.Context, names []string, f tensorBoardFlags) error {
	if len(names) > tensorboard.MaxRuns {
		return fmt.Errorf("%d runs: one TensorBoard shows at most %d", len(names), tensorboard.MaxRuns)
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	spec := tensorboard.Spec{Namespace: ns, AgentImage: f.agentImage, Image: f.image, TTL: f.ttl}
	for _, name := range names {
		_, found, err := o.findRun(ctx, name)
		if err != nil {
			return err
		}
		spec.Runs = append(spec.Runs, tensorBoardRun(found.Run))
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	own, err := o.chooseTensorBoardSecret(ctx, cs, &spec)
	if err != nil {
		return err
	}
	if err := spec.Check(); err != nil {
		return err
	}
	pod, err := tensorboard.Replace(ctx, cs.Kube, tensorboard.Pod(spec), f.timeout)
	if err != nil {
		return err
	}
	defer func() {
		// Ctrl-C ended ctx: the pod is deleted on a context of its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := tensorboard.Delete(ctx, cs.Kube, pod.Namespace, pod.Name); err != nil {
			fmt.Fprintf(o.env.ErrOut, "warning: %v; it ends by itself after --ttl %s\n", err, f.ttl)
		}
	}()
	if own {
		if err := o.createTensorBoardSecret(ctx, cs, pod, f.clusterEndpoint); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.env.ErrOut, "Created pod %s/%s, reading S3 with Secret %s; it is deleted when this command ends\n", pod.Namespace, pod.Name, spec.Secret)
	ready, err := forward.ReadyPod(ctx, cs.Kube, ns, tensorboard.Selector(spec.Runs), forward.PodOwner(pod.UID), f.timeout, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("waiting for the TensorBoard of runs %s: %w", strings.Join(names, " "), err)
	}
	title := fmt.Sprintf("TensorBoard of runs %s in %s", strings.Join(runNames(spec.Runs), " "), ns)
	return o.serveForward(ctx, f.forwardFlags, ready, tfjob.TensorBoardPort, title, tensorBoardURL)
}

// chooseTensorBoardSecret sets the Secret the pod reads S3 with: the runs' shared
// Secret if it exists, else the pod's own, which it reports by returning true.
func (o *rootOptions) chooseTensorBoardSecret(ctx context.Context, cs *clients, spec *tensorboard.Spec) (own bool, err error) {
	shared := tensorboard.SharedSecret(spec.Runs)
	if shared != "" {
		_, err := cs.Kube.CoreV1().Secrets(spec.Namespace).Get(ctx, shared, metav1.GetOptions{})
		switch {
		case err == nil || apierrors.IsForbidden(err):
			// One who may not read Secrets (a notebook's account) lets the pod read it.
			spec.Secret = shared
			return false, nil
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading secret %s/%s: %w", spec.Namespace, shared, err)
		}
	}
	spec.Secret = tensorboard.PodName(spec.Runs)
	return true, nil
}

// createTensorBoardSecret creates the pod's own Secret from the S3 settings the runs
// were found with, owned by the pod.
func (o *rootOptions) createTensorBoardSecret(ctx context.Context, cs *clients, pod *corev1.Pod, clusterEndpoint string) error {
	cfg, err := o.storageConfig()
	if err != nil {
		return err
	}
	endpoint, insecure := cfg.Endpoint, cfg.Insecure
	if clusterEndpoint != "" {
		endpoint, insecure = jobs.EndpointScheme(clusterEndpoint, cfg.Insecure)
	}
	return tensorboard.CreateSecret(ctx, cs.Kube, tensorboard.OwnSecret(pod, jobs.SecretData(endpoint, insecure, cfg)))
}

// tensorBoardRun is what the TensorBoard pod needs of a run: where it stores and the
// Secret its job read S3 with.
func tensorBoardRun(r runs.Run) tensorboard.Run {
	tr := tensorboard.Run{Job: r.Name, Run: r.Run, Prefix: r.Prefix}
	if r.Job != nil && r.Job.Spec.Storage != nil {
		tr.Secret = r.Job.Spec.Storage.SecretRef.Name
	}
	return tr
}

// runNames are the runs' names as TensorBoard shows them.
func runNames(rs []tensorboard.Run) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name()
	}
	return names
}

// tensorBoardURL is TensorBoard's URL at the forward's local address.
func tensorBoardURL(addr net.Addr) string { return "http://" + addr.String() + "/" }

// tensorBoardDeployment waits up to timeout for the job's TensorBoard Deployment, which
// the controller creates once asked, and returns it when the job controls it (by UID):
// only its pods are forwarded to, not any pod labelled as the job's TensorBoard.
func tensorBoardDeployment(ctx context.Context, cs *clients, job *tfv1.TFJob, timeout time.Duration) (*appsv1.Deployment, error) {
	name := tfjob.TensorBoardName(job.Name)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		deploy, err := cs.Kube.AppsV1().Deployments(job.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && metav1.IsControlledBy(deploy, job):
			return deploy, nil
		case err == nil:
			return nil, fmt.Errorf("the TensorBoard of job %s/%s: Deployment %s is not controlled by the job", job.Namespace, job.Name, name)
		case !apierrors.IsNotFound(err) && ctx.Err() == nil:
			return nil, fmt.Errorf("reading the TensorBoard Deployment %s/%s: %w", job.Namespace, name, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the TensorBoard of job %s/%s: no Deployment %s after %s", job.Namespace, job.Name, name, timeout)
		case <-time.After(jobs.PollInterval):
		}
	}
}
