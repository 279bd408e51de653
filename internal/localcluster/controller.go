package localcluster

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
)

// startController starts tfk8s-controller (again if its flags changed), pinned to the
// images pushed, and waits until it is ready, or installs it into the cluster with
// Options.Install.
func startController(ctx context.Context, l launcher, p paths, cfg *rest.Config, pushed map[string]string) error {
	if l.opts.Install != "" {
		return installController(ctx, l, p.kubeconfig, cfg)
	}
	args := append(controllerArgs(l.opts, p), pinnedImageArgs(pushed)...)
	ctrl, _, err := l.ensureRunningWithArgs(compController, args, false)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", l.opts.Ports.ControllerHealth)
	return l.waitReady(ctx, ctrl, "tfk8s-controller to be ready", func(ctx context.Context) error {
		return httpOK(ctx, url)
	})
}
