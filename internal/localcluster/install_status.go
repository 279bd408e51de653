package localcluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallStatus is what status shows of a controller installed into the cluster.
type InstallStatus struct {
	// Method is Options.Install.
	Method string
	// Pods are the controller's pods, Leader the one holding the leader election Lease
	// (empty when none does).
	Pods   []ControllerPod
	Leader string
	// Err says why the pods could not be read (the API server does not answer).
	Err error
}

// ControllerPod is one of the controller's pods.
type ControllerPod struct {
	Name, IP, State string
	Ready           bool
}

// readInstallStatus reads the controller's pods and Lease through the cluster's
// kubeconfig, briefly: status must answer even when the API server does not.
func readInstallStatus(method, kubeconfig string) *InstallStatus {
	st := &InstallStatus{Method: method}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		st.Err = err
		return st
	}
	cfg.Timeout = 5 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		st.Err = err
		return st
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := controllerPods(ctx, c)
	if err != nil {
		st.Err = err
		return st
	}
	for _, p := range pods {
		ready := false
		for _, cond := range p.Status.Conditions {
			ready = ready || (cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue)
		}
		st.Pods = append(st.Pods, ControllerPod{Name: p.Name, IP: p.Status.PodIP, State: podState(&p), Ready: ready})
	}
	st.Leader, _ = LeaderPod(ctx, c)
	return st
}

// LeaderPod is the controller pod that holds the leader election Lease: the holder's
// identity is its host name, the pod's name, then "_" and a UID.
func LeaderPod(ctx context.Context, c client.Client) (string, error) {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: InstallNamespace, Name: ControllerLease}, lease); err != nil {
		return "", fmt.Errorf("reading the leader election lease: %w", err)
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod, nil
}

// print writes the install method and the controller's pods.
func (s *InstallStatus) print(w io.Writer) {
	fmt.Fprintf(w, "tfk8s-controller: installed with %s in namespace %s (deployment %s)\n", s.Method, InstallNamespace, ControllerDeployment)
	if s.Err != nil {
		fmt.Fprintf(w, "  its pods cannot be read: %v\n", s.Err)
		return
	}
	if len(s.Pods) == 0 {
		fmt.Fprintln(w, "  no controller pod")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  POD\tREADY\tSTATUS\tIP\tLEADER")
	for _, p := range s.Pods {
		leader := ""
		if p.Name == s.Leader {
			leader = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%v\t%s\t%s\t%s\n", p.Name, p.Ready, p.State, p.IP, leader)
	}
	_ = tw.Flush()
}
