package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Status is what runs of a local cluster, and how to reach it.
type Status struct {
	// Dir is the state directory.
	Dir string
	// Kubeconfig is the administrator's kubeconfig; empty until Up has written it.
	Kubeconfig string
	// S3ConfigFile holds S3; empty until Up has written it.
	S3ConfigFile string
	// S3 are the settings of the cluster's S3 server.
	S3 storage.Config
	// Registry is the image registry's address, host:port, plain HTTP.
	Registry string
	// Components are the cluster's processes, in start order.
	Components []ComponentStatus
	// Install is the controller installed into the cluster (up --install), read from
	// the API server while it runs; nil when tfk8s-controller is a host process.
	Install *InstallStatus
	// UserConfig is the user's tfk8s config file, UserConfigOutcome what Up did with
	// it, UserConfigEndpoint the S3 endpoint it names after, and UserConfigWritten
	// whether Up wrote it (Created or Updated). Only Up sets them.
	UserConfig         string
	UserConfigOutcome  UserConfigOutcome
	UserConfigEndpoint string
	UserConfigWritten  bool
	// MetricsSkipped says why metrics-server does not run when up skipped it on
	// purpose: the running kube-apiserver lacks the aggregation layer's flags.
	MetricsSkipped string
}

// ComponentStatus is one process of the cluster.
type ComponentStatus struct {
	Name string
	// PID is the process's id while it runs, else 0.
	PID int
	// Address is where it listens first.
	Address string
	// Log is its log file.
	Log string
}

// Running reports whether the process runs.
func (c ComponentStatus) Running() bool { return c.PID != 0 }

// Running reports whether every component runs.
func (s *Status) Running() bool {
	for _, c := range s.Components {
		if !c.Running() {
			return false
		}
	}
	return true
}

// runningBut reports whether every component other than name runs.
func (s *Status) runningBut(name string) bool {
	for _, c := range s.Components {
		if c.Name != name && !c.Running() {
			return false
		}
	}
	return true
}

// Stopped reports whether no component runs.
func (s *Status) Stopped() bool {
	for _, c := range s.Components {
		if c.Running() {
			return false
		}
	}
	return true
}

// StatusOf reports which components of the cluster in opts.Dir run, from their pid
// files. It needs no privileges and changes nothing.
func StatusOf(opts Options) (*Status, error) {
	opts, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return statusOf(opts), nil
}

// statusOf is StatusOf with opts resolved.
func statusOf(opts Options) *Status {
	p := pathsIn(opts.Dir)
	s := &Status{Dir: opts.Dir, Registry: registryAddr(opts)}
	if _, err := os.Stat(p.kubeconfig); err == nil {
		s.Kubeconfig = p.kubeconfig
	}
	if cfg, err := readS3Config(p.s3Config); err == nil {
		s.S3, s.S3ConfigFile = cfg, p.s3Config
	}
	kubelets := upstreamKubeletAddrs(opts)
	for _, c := range components(opts) {
		cs := ComponentStatus{Name: c.name, Address: kubelets[c.name], Log: filepath.Join(p.run, c.name+".log")}
		if len(c.endpoints) > 0 {
			cs.Address = c.endpoints[0].addr.String()
		}
		if running := proc.FindDetached(p.run, c.name); running != nil {
			cs.PID = running.Pid()
		}
		s.Components = append(s.Components, cs)
	}
	s.MetricsSkipped = metricsSkipped(p.run)
	if opts.Install != "" {
		s.Install = &InstallStatus{Method: opts.Install}
		if s.Kubeconfig != "" && proc.FindDetached(p.run, compAPIServer) != nil {
			s.Install = readInstallStatus(opts.Install, s.Kubeconfig)
		}
	}
	return s
}

// metricsSkipped is why up skipped metrics-server, "" if it did not: metrics-server
// is stopped and the kube-apiserver that runs lacks the aggregation layer's flags.
func metricsSkipped(run string) string {
	apiServer := proc.FindDetached(run, compAPIServer)
	if apiServer == nil || proc.FindDetached(run, compMetricsServer) != nil {
		return ""
	}
	flag, err := apiServerFlagMissing(apiServer.Pid(), controlplane.AggregationPKIIn(run).APIServerArgs())
	if err != nil || flag == "" {
		return ""
	}
	return "kube-apiserver runs without " + flag
}

// anyRunning reports whether a component of the cluster in dir, of the given number
// of nodes, runs.
func anyRunning(dir string, nodes int) bool {
	run := pathsIn(dir).run
	names := slices.Clone(allComponents)
	for i := 1; i < nodes; i++ {
		names = append(names, compNode+nodeSuffix(i))
	}
	for _, name := range names {
		if proc.FindDetached(run, name) != nil {
			return true
		}
	}
	return false
}

// Print writes the status as a table, followed by how to reach the cluster.
func (s *Status) Print(w io.Writer) {
	state := "running"
	switch {
	case s.Stopped():
		state = "stopped"
	case s.MetricsSkipped != "" && s.runningBut(compMetricsServer):
		state = "running; metrics-server skipped: kube-apiserver without the aggregation layer " +
			"(tfk8s local down, then tfk8s local up, starts it)"
	case !s.Running():
		state = "partly running (tfk8s local up restarts what is missing)"
	}
	fmt.Fprintf(w, "Local cluster in %s: %s\n", s.Dir, state)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATUS\tADDRESS\tLOG")
	for _, c := range s.Components {
		pid, st := "-", "stopped"
		if c.Running() {
			pid, st = strconv.Itoa(c.PID), "running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, pid, st, c.Address, c.Log)
	}
	_ = tw.Flush()
	if s.Stopped() {
		return
	}
	if s.Install != nil {
		s.Install.print(w)
	}
	if s.Kubeconfig != "" {
		fmt.Fprintf(w, "Kubeconfig: %s (context %s)\n", s.Kubeconfig, ContextName)
	}
	if s.S3ConfigFile != "" {
		fmt.Fprintf(w, "S3: http://%s, bucket %s (settings in %s)\n", s.S3.Endpoint, s.S3.Bucket, s.S3ConfigFile)
	}
	fmt.Fprintf(w, "Registry: http://%s, the node's mirror of every registry (tfk8s local load IMAGE pushes to it)\n", s.Registry)
}

// PrintUsage writes how to use and stop the cluster.
func (s *Status) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "\nUse it:\n")
	fmt.Fprintf(w, "  export KUBECONFIG=%s\n", s.Kubeconfig)
	fmt.Fprintf(w, "  kubectl get nodes\n")
	fmt.Fprintf(w, "  tfk8s submit examples/trainer --name demo --image "+images.Python+" \\\n"+
		"      --ps 2 --workers 3 --chief --artifacts checkpoints --follow \\\n"+
		"      -- python3 trainer.py --steps 1000 --model-dir /workspace/checkpoints\n")
	s.printUserConfig(w)
	fmt.Fprintf(w, "Images: pods pull through the cluster's registry (http://%s), which holds the images of _out/images;\n"+
		"  tfk8s local load%s IMAGE.tar pushes one more (OCI layout or archive, docker save tarball).\n", s.Registry, dirFlag(s.Dir))
	fmt.Fprintf(w, "Stop it:\n  tfk8s local down%s\n", dirFlag(s.Dir))
}

// dirFlag is " --dir DIR" unless dir is the default state directory.
func dirFlag(dir string) string {
	if def, err := DefaultDir(); err == nil && def == dir {
		return ""
	}
	return " --dir " + dir
}
