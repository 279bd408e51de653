package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/dashboard"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func newDashboardCommand(o *rootOptions) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "dashboard [--address HOST:PORT] [--open]",
		Short: "Serve the web dashboard: jobs, replicas, events, live logs, suspend, resume, delete",
		Long: `Serve the tfk8s web dashboard. Locally it acts with your kubeconfig, as kubectl proxy
does, so it listens on a loopback address only and answers only connections from this
machine: open the URL it prints (or pass --open).

With --in-cluster (the dashboard's Deployment), each user signs in with a bearer token,
checked with a TokenReview and kept on the server; every call is made with that token,
so users see only what their RBAC allows. The dashboard's own credentials (its
ServiceAccount, or the kubeconfig) serve only the TokenReview. It reads a job's logs
and artifacts in S3 only at the endpoints ` + dashboard.S3EndpointsFlag + ` names.`,
		Example: "  tfk8s dashboard --open\n  tfk8s dashboard --address 127.0.0.1:9000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.serveDashboard(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.address, "address", dashboard.DefaultAddress, "HOST:PORT to listen on; a loopback address unless --in-cluster")
	cmd.Flags().BoolVar(&f.open, "open", false, "open the dashboard in the browser")
	cmd.Flags().BoolVar(&f.inCluster, "in-cluster", false, "ask users to sign in with a bearer token and act with it")
	cmd.Flags().StringSliceVar(&f.s3Endpoints, strings.TrimPrefix(dashboard.S3EndpointsFlag, "--"), nil,
		"an S3 endpoint (host:port) whose logs and artifacts the dashboard may read, repeatable; "+
			"default: with --in-cluster none, else any (as tfk8s logs)")
	return cmd
}

// serveFlags are the flags of tfk8s dashboard.
type serveFlags struct {
	address         string
	open, inCluster bool
	s3Endpoints     []string
}

// serveDashboard serves the dashboard on f.address until ctx ends.
func (o *rootOptions) serveDashboard(ctx context.Context, f serveFlags) error {
	if !f.inCluster && !dashboard.LoopbackAddress(f.address) {
		return fmt.Errorf("--address %s: the local dashboard acts with your kubeconfig and signs nobody in, "+
			"so it listens on a loopback address only (127.0.0.1, [::1] or localhost); "+
			"only --in-cluster, where each user signs in, may listen elsewhere", f.address)
	}
	s3, err := dashboardS3Endpoints(f)
	if err != nil {
		return err
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	// The dashboard's cluster dials only the S3 endpoints allowed.
	clusterOpts := &rootOptions{env: o.env, kube: o.kube, s3: o.s3, checkS3Endpoint: s3.Check}
	newCluster := clusterOpts.newDashboardCluster
	if f.inCluster {
		// In-cluster, S3 is reached with the job's storage Secret only, read with the
		// user's token: never with S3 settings of the dashboard's own, which would show
		// logs to users who may not read the Secret.
		clusterOpts.env, clusterOpts.s3 = Env{IOStreams: o.env.IOStreams, Getenv: func(string) string { return "" }}, s3Flags{}
		newCluster = clusterOpts.newInClusterDashboardCluster
	}
	srv, err := dashboard.New(dashboard.Options{
		Config: cfg, NewCluster: newCluster, Namespace: ns, InCluster: f.inCluster, Log: o.env.ErrOut,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.address)
	if err != nil {
		return fmt.Errorf("--address %s: %w", f.address, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(o.env.Out, "Dashboard: %s\n", url)
	if f.open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(o.env.ErrOut, "warning: %v\n", err)
		}
	}
	hs := srv.HTTPServer(ctx)
	stopped := context.AfterFunc(ctx, func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	})
	defer stopped()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	return nil
}

// dashboardS3Endpoints are the S3 endpoints the dashboard may reach: those of
// --allowed-s3-endpoint; without it, none in the cluster, where a user's Secret names
// the endpoint, and any locally, where the dashboard reads S3 as tfk8s logs does.
func dashboardS3Endpoints(f serveFlags) (*dashboard.S3Endpoints, error) {
	if len(f.s3Endpoints) == 0 && !f.inCluster {
		return dashboard.AnyS3Endpoint(), nil
	}
	return dashboard.AllowS3Endpoints(f.s3Endpoints)
}

// dashboardCluster is the dashboard's view of the cluster, as one user, through the
// code of the CLI's own commands.
type dashboardCluster struct {
	o      *rootOptions
	client client.Client
	kube   kubernetes.Interface
	// noS3 is true in-cluster: a notebook started there gets no S3 settings.
	noS3 bool
}

// newDashboardCluster connects with cfg, which carries the user's credentials.
func (o *rootOptions) newDashboardCluster(cfg *rest.Config, _ string) (dashboard.Cluster, error) {
	return o.connectDashboard(cfg, false)
}

// newInClusterDashboardCluster is newDashboardCluster for the dashboard in the
// cluster, which gives notebooks no S3 settings of its own.
func (o *rootOptions) newInClusterDashboardCluster(cfg *rest.Config, _ string) (dashboard.Cluster, error) {
	return o.connectDashboard(cfg, true)
}

// connectDashboard connects with cfg; noS3 leaves the notebooks it starts without S3
// settings.
func (o *rootOptions) connectDashboard(cfg *rest.Config, noS3 bool) (dashboard.Cluster, error) {
	cs, err := connect(cfg, "")
	if err != nil {
		return nil, err
	}
	return &dashboardCluster{o: o, client: cs.Client, kube: cs.Kube, noS3: noS3}, nil
}

// in is the CLI's clients, acting in namespace.
func (d *dashboardCluster) in(namespace string) *clients {
	return &clients{Client: d.client, Kube: d.kube, Namespace: namespace}
}

func (d *dashboardCluster) Namespaces(ctx context.Context) ([]string, error) {
	list, err := d.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	return names, nil
}

func (d *dashboardCluster) Jobs(ctx context.Context, namespace string) ([]dashboard.JobRow, error) {
	list := &tfv1.TFJobList{}
	if err := d.client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing tfjobs: %w", err)
	}
	pods := d.podsByJob(ctx, namespace)
	now := time.Now()
	rows := make([]dashboard.JobRow, 0, len(list.Items))
	for i := range list.Items {
		job := &list.Items[i]
		row := dashboard.JobRow{
			Namespace: job.Namespace, Name: job.Name, State: string(job.Status.State),
			Ready: readyPods(pods[job.Name]), Created: job.CreationTimestamp.Time, Image: jobImage(job),
			GPUsAllocated: tfjob.GPUsAllocated(pods[job.Name]), GPUsRequested: tfjob.GPUsRequested(job),
		}
		for _, rt := range tfv1.ReplicaTypes {
			row.Desired += tfjob.Replicas(job.Spec.TFReplicaSpecs[rt])
		}
		if start := timeOf(job.Status.StartTime); !start.IsZero() {
			row.Duration = timeOf(job.Status.CompletionTime).Sub(start)
			if job.Status.CompletionTime == nil {
				row.Duration = now.Sub(start)
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b dashboard.JobRow) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

// podsByJob groups the pods of a namespace by their job; none if the user may not
// list pods.
func (d *dashboardCluster) podsByJob(ctx context.Context, namespace string) map[string][]corev1.Pod {
	pods := &corev1.PodList{}
	if err := d.client.List(ctx, pods, client.InNamespace(namespace), client.HasLabels{tfv1.LabelJobName}); err != nil {
		return nil
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byJob[p.Labels[tfv1.LabelJobName]] = append(byJob[p.Labels[tfv1.LabelJobName]], p)
	}
	return byJob
}

// readyPods counts the pods that are ready or have succeeded.
func readyPods(pods []corev1.Pod) int32 {
	var n int32
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodSucceeded || jobs.PodServing(&pods[i]) {
			n++
		}
	}
	return n
}

func (d *dashboardCluster) Job(ctx context.Context, namespace, name string) (*dashboard.JobPage, error) {
	job, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	pods, err := jobs.Pods(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	events, err := jobs.Events(ctx, d.client, job)
	if err != nil {
		return nil, err
	}
	page := &dashboard.JobPage{Job: job, GPUsAllocated: tfjob.GPUsAllocated(pods), GPUsRequested: tfjob.GPUsRequested(job)}
	for i := range pods {
		p := &pods[i]
		phase := jobs.PodPhase(p)
		restarts, exit := jobs.ContainerSummary(p)
		page.Replicas = append(page.Replicas, dashboard.ReplicaRow{
			Replica: jobs.ReplicaName(p), Pod: p.Name, Phase: phase, Node: p.Spec.NodeName,
			Restarts: restarts, ExitCode: exit, Created: p.CreationTimestamp.Time, GPUs: tfjob.PodGPUs(&p.Spec),
		})
	}
	for i := range events {
		e := &events[i]
		page.Events = append(page.Events, dashboard.EventRow{
			Time: jobs.EventTime(e), Type: e.Type, Reason: e.Reason, From: e.ReportingController, Message: e.Note,
		})
	}
	var buf bytes.Buffer
	if err := jobs.WriteTFConfig(&buf, pods, ""); err == nil {
		page.TFConfig = buf.String()
	}
	buf.Reset()
	if err := printObject(&buf, jobspec.ForPrinting(job), outputYAML); err == nil {
		page.YAML = buf.String()
	}
	return page, nil
}

// Logs streams logs as tfk8s logs [-f | --previous] prints them; its notes (a
// replica with no logs yet) go to w too.
func (d *dashboardCluster) Logs(ctx context.Context, req dashboard.LogRequest, w io.Writer) error {
	l := &jobs.Logs{
		Storage: d.o.storage(), Clients: d.in(req.Namespace), Name: req.Job, Replica: req.Replica,
		Which: jobs.Attempt{Previous: req.Previous}, Out: &jobs.LineWriter{W: w}, ErrOut: w,
	}
	if req.Follow {
		return l.Follow(ctx)
	}
	return l.Print(ctx)
}

func (d *dashboardCluster) Suspend(ctx context.Context, namespace, name string, suspend bool) error {
	// setSuspend takes the command for its context.
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	return jobs.SetSuspend(cmd.Context(), d.in(namespace), name, suspend)
}

func (d *dashboardCluster) Delete(ctx context.Context, namespace, name string) error {
	job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := d.client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return fmt.Errorf("deleting tfjob %s: %w", name, err)
	}
	return nil
}
