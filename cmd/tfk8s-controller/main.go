// Command tfk8s-controller runs the TFJob controller: it watches TFJobs and creates,
// restarts and cleans up their pods.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	uberzap "go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/logging"
	"github.com/tfk8s/tfk8s/internal/version"
)

// flags is the controller's command line.
type flags struct {
	opts      controller.ManagerOptions
	zap       zap.Options
	qps       float64
	burst     int
	portRange string
	showVer   bool
	gang      string
	compact   int
	agentDir  string
	fetch     string
}

// bindFlags defines the controller's flags on fs.
func bindFlags(fs *flag.FlagSet) *flags {
	f := &flags{}
	opts := &f.opts
	fs.BoolVar(&f.showVer, "version", false, "print the version and the git revision, then exit")
	fs.Float64Var(&f.qps, "kube-api-qps", 1000, "queries per second to the API server")
	fs.IntVar(&f.burst, "kube-api-burst", 2000, "burst of queries to the API server")
	fs.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "TFJobs reconciled at once")
	fs.IntVar(&opts.PodCreateConcurrency, "pod-create-concurrency", 32, "pod creations in flight, all jobs together")
	fs.StringVar(&opts.ClusterDomain, "cluster-domain", "", "cluster DNS domain; when set, TF_CONFIG addresses are fully qualified (<pod>.<job>.<namespace>.svc.<domain>)")
	fs.StringVar(&opts.Agent.Image, "agent-image", controller.DefaultAgentImage, "image holding the tfk8s-agent binary, injected into jobs that set code, data or artifacts")
	fs.StringVar(&f.agentDir, "agent-dir-size-limit", controller.DefaultAgentDirSizeLimit.String(),
		"sizeLimit of the emptyDir holding the agent's binary and the log of every attempt, in the pods of jobs that set code, data or artifacts; the kubelet evicts a pod that writes more")
	fs.StringVar(&f.fetch, "fetch-size-limit", controller.DefaultFetchSizeLimit.String(),
		"sizeLimit of each emptyDir the agent unpacks a job's code or data into; the kubelet evicts a pod that writes more. A job with more data mounts a volume at the data's path")
	fs.StringVar(&opts.TensorBoardImage, "tensorboard-image", controller.DefaultTensorBoardImage, "image running the TensorBoard of jobs that set spec.tensorboard without an image of their own")
	fs.StringVar(&f.portRange, "host-port-range", fmt.Sprintf("%d-%d", controller.DefaultHostPortRange.Min, controller.DefaultHostPortRange.Max), "ports given to the replicas of HostNetwork jobs")
	fs.DurationVar(&opts.RetryBackoff, "retry-backoff", controller.DefaultRetryBackoff, "delay before a failed replica is re-created, doubling with each failure in a row up to 6m")
	fs.IntVar(&f.compact, "compact-tf-config-above", controller.DefaultCompactTFConfigAbove,
		"size in bytes of TF_CONFIG above which the pods of a job run by the tfk8s agent carry the cluster (TFK8S_CLUSTER) for the agent to compose TF_CONFIG from; 0 for every job of several replicas. "+
			"Every pod carries its own TF_CONFIG, which grows with the job: a job of n replicas stores n² addresses in etcd.")
	fs.StringVar(&f.gang, "gang-scheduler", "none", "gang scheduler of the jobs whose runPolicy.schedulingPolicy.provider is unset: none, native, volcano or scheduler-plugins")
	fs.StringVar(&opts.Gang.SchedulerPluginsScheduler, "scheduler-plugins-scheduler-name", controller.DefaultSchedulerPluginsScheduler, "schedulerName of the pods of scheduler-plugins gangs")
	fs.BoolVar(&opts.Kubeflow, "kubeflow", false, "reconcile Kubeflow's kubeflow.org/v1 TFJobs too; the API server must serve their CRD (config/crd/kubeflow)")
	fs.BoolVar(&opts.LeaderElection, "leader-elect", false, "elect a leader among the controller's replicas")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's namespace)")
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", ":8080", `address serving Prometheus metrics; "0" turns them off`)
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", ":8081", `address serving /healthz and /readyz; "0" turns them off`)
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "0", `address serving Go profiles under /debug/pprof, e.g. "127.0.0.1:6060"; "0" turns them off`)
	fs.BoolVar(&opts.FullCache, "cache-full-objects", false, "cache whole pods, Services and TFJobs rather than what the controller reads of them; costs memory, for measuring only")
	fs.BoolVar(&opts.JobMetricsByNamespace, "metrics-jobs-by-namespace", false, "split the tfk8s_jobs gauge by namespace as well as state (one series per namespace and state)")
	f.zap.BindFlags(fs)
	return f
}

// managerOptions completes the manager's options with the flags that need parsing, or
// names the flag at fault.
func (f *flags) managerOptions() (opts controller.ManagerOptions, badFlag string, err error) {
	opts = f.opts
	if opts.HostPortRange, err = parsePortRange(f.portRange); err != nil {
		return opts, "--host-port-range", err
	}
	if opts.Gang.DefaultProvider, err = controller.ParseGangProvider(f.gang); err != nil {
		return opts, "--gang-scheduler", err
	}
	if f.compact < 0 {
		return opts, "--compact-tf-config-above", fmt.Errorf("%d is negative: a size in bytes, 0 or more", f.compact)
	}
	opts.CompactTFConfigAbove = &f.compact
	if opts.Agent.DirSizeLimit, err = parseSizeLimit(f.agentDir); err != nil {
		return opts, "--agent-dir-size-limit", err
	}
	if opts.Agent.FetchSizeLimit, err = parseSizeLimit(f.fetch); err != nil {
		return opts, "--fetch-size-limit", err
	}
	return opts, "", nil
}

// parseSizeLimit reads an emptyDir's sizeLimit: a quantity of bytes above 0.
func parseSizeLimit(text string) (*resource.Quantity, error) {
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return nil, fmt.Errorf("%q is not a size (such as 20Gi): %w", text, err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("%q: a size above 0", text)
	}
	return &q, nil
}

func main() {
	f := bindFlags(flag.CommandLine)
	flag.Parse()
	if f.showVer {
		fmt.Printf("tfk8s-controller %s %s\n", version.Version, version.Revision)
		return
	}
	f.zap.ZapOpts = append(f.zap.ZapOpts, uberzap.WrapCore(logging.LazyFields))
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	log := ctrl.Log.WithName("tfk8s-controller")
	goLimit, err := setMemoryLimit(os.Getenv)
	if err != nil {
		log.Error(err, "Invalid environment")
		os.Exit(2)
	}
	opts, badFlag, err := f.managerOptions()
	if err != nil {
		log.Error(err, "Invalid flag", "flag", badFlag)
		os.Exit(2)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Reading kubeconfig (flag --kubeconfig, env KUBECONFIG, or in-cluster)")
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	cfg.UserAgent = "tfk8s-controller"

	mgr, err := controller.NewManager(cfg, opts)
	if err != nil {
		log.Error(err, "Setting up")
		os.Exit(1)
	}
	log.Info("Starting", "version", version.Version, "revision", version.Revision, "agentImage", opts.Agent.Image, "maxConcurrentReconciles", opts.MaxConcurrentReconciles, "podCreateConcurrency", opts.PodCreateConcurrency, "goMemoryLimit", goLimit)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Running")
		os.Exit(1)
	}
}

// parsePortRange reads "MIN-MAX".
func parsePortRange(s string) (controller.PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	min, err1 := strconv.Atoi(lo)
	max, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || min < 1 || max > 65535 || min > max {
		return controller.PortRange{}, fmt.Errorf("%q is not a port range MIN-MAX within 1-65535", s)
	}
	return controller.PortRange{Min: int32(min), Max: int32(max)}, nil
}
