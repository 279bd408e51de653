// Package forward forwards a local port to a pod through the API server, as kubectl
// port-forward does, and keeps the forward when the pod's server restarts: tfk8s
// tensorboard and tfk8s notebook open reach their pods with it.
package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/tfk8s/tfk8s/internal/jobs"
)

const (
	// forwardRetries bounds how often in a row a lost forward is dialled again
	// before the forward gives up.
	forwardRetries = 5
	// forwardRetryDelay is the pause between those attempts.
	forwardRetryDelay = time.Second
)

// ToPod forwards localAddr ("127.0.0.1:0" picks a port) to port of the pod, through the
// API server; it returns the bound local address; the forward ends when ctx ends.
func ToPod(ctx context.Context, cfg *rest.Config, namespace, pod string, port int32, localAddr string, errOut io.Writer) (net.Addr, error) {
	addr, _, err := Start(ctx, cfg, namespace, pod, port, localAddr, errOut)
	return addr, err
}

// Start is ToPod that also says when the forward ended before ctx: the
// API server or the pod went away, and dialling again failed forwardRetries times.
//
// A connection to a port nobody listens on makes client-go drop the whole forward
// (kubectl port-forward exits), so a browser that reloads while the pod's server
// restarts would end it; the forward is dialled again on the same local port instead.
func Start(ctx context.Context, cfg *rest.Config, namespace, pod string, port int32, localAddr string, errOut io.Writer) (net.Addr, <-chan error, error) {
	host, portText, err := net.SplitHostPort(localAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("local address %q: %w", localAddr, err)
	}
	localPort, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, nil, fmt.Errorf("local address %q: port %q is not a number from 0 to 65535", localAddr, portText)
	}
	dialer, err := podDialer(cfg, namespace, pod)
	if err != nil {
		return nil, nil, err
	}
	f := podForward{dialer: dialer, host: host, remote: port, target: namespace + "/" + pod, errOut: errOut}
	bound, ended, err := f.run(ctx, uint16(localPort))
	if err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- f.keep(ctx, bound, ended) }()
	return &net.TCPAddr{IP: net.ParseIP(host), Port: int(bound)}, done, nil
}

// podDialer opens pods/NAME/portforward as kubectl does: WebSocket first (tunnelling
// SPDY, which API servers since 1.31 accept), SPDY when the server or a proxy refuses
// the WebSocket upgrade. The dialers and the fallback test are k8s.io/streaming's:
// client-go's WebSocket transport fails with that package's UpgradeFailureError, which
// apimachinery's httpstream.IsUpgradeFailure does not recognise.
func podDialer(cfg *rest.Config, namespace, pod string) (streamhttp.Dialer, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the SPDY transport: %w", err)
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerForStreaming(url, cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring the WebSocket transport: %w", err)
	}
	return portforward.NewFallbackDialerForStreaming(wsDialer, spdyDialer, func(err error) bool {
		return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
	}), nil
}

// podForward is one local port forwarded to a pod's port.
type podForward struct {
	dialer streamhttp.Dialer
	host   string
	remote int32
	target string // namespace/pod, for messages
	errOut io.Writer
}

// run starts forwarding from localPort (0 picks one) and returns the bound port once
// it listens, and a channel that gets the forward's end.
func (f podForward) run(ctx context.Context, localPort uint16) (uint16, <-chan error, error) {
	stop, ready := make(chan struct{}), make(chan struct{})
	ports := []string{fmt.Sprintf("%d:%d", localPort, f.remote)}
	pf, err := portforward.NewOnAddressesForStreaming(f.dialer, []string{f.host}, ports, stop, ready, io.Discard, f.errOut)
	if err != nil {
		return 0, nil, fmt.Errorf("forwarding to pod %s: %w", f.target, err)
	}
	ended := make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	select {
	case <-ready:
	case err := <-ended:
		if err == nil {
			err = ctx.Err()
		}
		return 0, nil, fmt.Errorf("forwarding to port %d of pod %s: %w", f.remote, f.target, err)
	}
	bound, err := pf.GetPorts()
	if err != nil || len(bound) == 0 {
		return 0, nil, fmt.Errorf("forwarding to pod %s: no local port bound: %v", f.target, err)
	}
	return bound[0].Local, ended, nil
}

// keep dials the forward again on the same local port each time it is lost, until ctx
// ends or forwardRetries attempts in a row fail.
func (f podForward) keep(ctx context.Context, port uint16, ended <-chan error) error {
	failures := 0
	for {
		err := <-ended
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			err = portforward.ErrLostConnectionToPod
		}
		fmt.Fprintf(f.errOut, "Forwarding to pod %s stopped (%v); forwarding again\n", f.target, err)
		for {
			var runErr error
			if _, ended, runErr = f.run(ctx, port); runErr == nil {
				failures = 0
				break
			}
			if failures++; failures >= forwardRetries || ctx.Err() != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("giving up after %d attempts: %w", failures, runErr)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(forwardRetryDelay):
			}
		}
	}
}

// ReadyPod returns a Running and Ready pod of the namespace matching selector and
// belonging to owner, waiting up to timeout for one (printing what it waits for to
// errOut); the error names what is missing. A pod that matches but is not the owner's
// is never returned, and the messages say so.
func ReadyPod(ctx context.Context, cs kubernetes.Interface, namespace, selector string, owner Owner, timeout time.Duration, errOut io.Writer) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	said := ""
	for {
		pod, state, err := pickReadyPod(ctx, cs, namespace, selector, owner)
		if err != nil {
			return nil, err
		}
		if pod != nil {
			return pod, nil
		}
		if state != said {
			fmt.Fprintf(errOut, "Waiting for a ready pod of %s labelled %s in namespace %s: %s\n", owner, selector, namespace, state)
			said = state
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("no ready pod of %s labelled %s in namespace %s after %s: %s", owner, selector, namespace, timeout, state)
			}
			return nil, ctx.Err()
		case <-time.After(jobs.PollInterval):
		}
	}
}

// pickReadyPod returns a ready pod of owner matching selector, else nil and what the
// pods are doing instead, those not the owner's included.
func pickReadyPod(ctx context.Context, cs kubernetes.Interface, namespace, selector string, owner Owner) (*corev1.Pod, string, error) {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		if ctx.Err() != nil {
			return nil, "no pod yet", nil
		}
		return nil, "", fmt.Errorf("listing pods labelled %s in namespace %s: %w", selector, namespace, err)
	}
	var states []string
	for i := range pods.Items {
		p := &pods.Items[i]
		rs, err := readReplicaSet(ctx, cs, owner, p)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "no pod yet", nil
			}
			return nil, "", err
		}
		if why := owner.notOwned(p, rs); why != "" {
			states = append(states, fmt.Sprintf("pod %s carries the label but %s, so it is never forwarded to", p.Name, why))
			continue
		}
		if jobs.PodServing(p) {
			return p, "", nil
		}
		states = append(states, fmt.Sprintf("pod %s is %s", p.Name, jobs.PodWaitState(p)))
	}
	if len(states) == 0 {
		return nil, "no pod yet", nil
	}
	return nil, strings.Join(states, "; "), nil
}
