package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// postStartTimeout bounds a postStart hook; the kubelet's has no bound of its own, but a
// hook that never returns would leave the container unstoppable by its own handler.
const postStartTimeout = 2 * time.Minute

// runHook runs a lifecycle handler against an instance within timeout.
func (r *containerRunner) runHook(ctx context.Context, inst *instance, h *corev1.LifecycleHandler, timeout time.Duration) error {
	if h.Sleep != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(time.Duration(h.Sleep.Seconds)*time.Second, timeout)):
			return nil
		}
	}
	return r.check(ctx, inst, h.Exec, h.HTTPGet, h.TCPSocket, timeout)
}

// check runs the one action given, of a hook or probe, against an instance within
// timeout: a command inside the container that must exit 0, an HTTP GET that must
// answer 2xx or 3xx, or a TCP connection that must open.
func (r *containerRunner) check(ctx context.Context, inst *instance, ex *corev1.ExecAction, get *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, timeout time.Duration) error {
	switch {
	case ex != nil:
		code, out, err := r.w.m.runc.exec(ctx, inst.id, ex.Command, timeout)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("command %q exited with %d: %s", strings.Join(ex.Command, " "), code, strings.TrimSpace(string(out)))
		}
		return nil
	case get != nil:
		return httpCheck(ctx, r.w.podIPForChecks(), &r.spec, get, timeout)
	case tcp != nil:
		return tcpCheck(ctx, r.w.podIPForChecks(), &r.spec, tcp, timeout)
	}
	return fmt.Errorf("no action this node supports")
}

// checkAddress is the host:port a check reaches: its host, else the pod's IP, and its
// port, a named one looked up among the container's.
func checkAddress(c *corev1.Container, podIP, host string, port intstr.IntOrString) (string, error) {
	if host == "" {
		host = podIP
	}
	n := port.IntValue()
	if port.Type == intstr.String {
		n = -1
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				n = int(p.ContainerPort)
			}
		}
		if v, err := strconv.Atoi(port.StrVal); err == nil {
			n = v
		}
		if n < 0 {
			return "", fmt.Errorf("container %s has no port named %q", c.Name, port.StrVal)
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// httpCheck GETs an HTTP handler: success is a status from 200 to 399.
func httpCheck(ctx context.Context, podIP string, c *corev1.Container, g *corev1.HTTPGetAction, timeout time.Duration) error {
	addr, err := checkAddress(c, podIP, g.Host, g.Port)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := url.URL{Scheme: scheme, Host: addr}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "kube-probe/tfk8s")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // #nosec G402 -- probes do not verify, as the kubelet's
		DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// tcpCheck succeeds when a TCP connection opens.
func tcpCheck(ctx context.Context, podIP string, c *corev1.Container, s *corev1.TCPSocketAction, timeout time.Duration) error {
	addr, err := checkAddress(c, podIP, s.Host, s.Port)
	if err != nil {
		return err
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}
