package controller

import (
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tfk8s/tfk8s/internal/scheme"
)

// ManagerOptions configure the tfk8s controller manager.
type ManagerOptions struct {
	Options
	// MaxConcurrentReconciles is how many jobs are reconciled at once.
	MaxConcurrentReconciles int
	// MetricsBindAddress serves /metrics; "0" turns it off.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz; "" or "0" turns it off.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles under /debug/pprof; "" or "0" turns it off.
	PprofBindAddress string
	// LeaderElection makes one of several replicas of the manager active at a time.
	LeaderElection          bool
	LeaderElectionNamespace string
	// SkipNameValidation lets one process start the controller more than once, as tests
	// that restart it do.
	SkipNameValidation bool
	// FullCache caches whole objects, as the API server sends them, rather than what
	// tfk8s reads of them: only to measure what stripping saves.
	FullCache bool
	// JobMetricsByNamespace splits the tfk8s_jobs gauge by namespace as well as state:
	// one series per namespace and state.
	JobMetricsByNamespace bool
	// Logger receives the manager's and the controller's logs; controller-runtime's
	// global logger when zero.
	Logger logr.Logger
}

// NewManager returns a manager running the TFJob controller against cfg.
func NewManager(cfg *rest.Config, opts ManagerOptions) (ctrl.Manager, error) {
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 16
	}
	s := scheme.New()
	AddGangTypes(s)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  s,
		Cache:                   CacheOptions(opts.FullCache),
		MapperProvider:          newRESTMapper,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		Logger:                  opts.Logger,
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "tfk8s-controller.tfk8s.io",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	r := NewTFJobReconciler(podTimingClient{mgr.GetClient()}, mgr.GetEventRecorder("tfk8s-controller"), opts.Options)
	r.APIReader = mgr.GetAPIReader()
	jobStates.use(mgr.GetCache(), opts.JobMetricsByNamespace, opts.Kubeflow)
	if err := r.SetupWithManager(mgr, controllerOptions(opts)); err != nil {
		return nil, fmt.Errorf("setting up the TFJob controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// controllerOptions are the TFJob controller's options. Its work queue is client-go's,
// not controller-runtime's priority queue: in controller-runtime v0.24 that queue can
// hand an item to a worker that has just left for shutdown, and then holds its locks
// forever, so that the controller never stops (kubernetes-sigs/controller-runtime
// #3538, fixed in v0.25, which needs Kubernetes 1.37's libraries). A restarted
// controller then reconciles the jobs it lists before the events that arrive
// meanwhile, as it did before the priority queue.
func controllerOptions(opts ManagerOptions) controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		SkipNameValidation:      &opts.SkipNameValidation,
		UsePriorityQueue:        ptr.To(false),
	}
}
