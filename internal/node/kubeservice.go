package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The node has no kube-proxy, yet a pod's in-cluster client (client-go's
// rest.InClusterConfig, the tfk8s controller installed with Helm among them) dials
// the kubernetes Service: KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, the
// Service's ClusterIP (10.96.0.1:443). So the node serves that one Service itself: the
// ClusterIP is an address of the bridge, where a pod's packets to it arrive through
// its default route, and a TCP relay listening there (on this bridge alone, so that
// other nodes on the host may serve their own) passes the bytes to the API server
// unopened. TLS stays end to end: the pod checks the API server's certificate, which
// names the ClusterIP, against the cluster's CA (kube-root-ca.crt), and the API server
// sees the pod's own token.

// kubernetesServiceWait bounds the wait for the API server to create the kubernetes
// Service, which it does right after it starts.
const kubernetesServiceWait = 30 * time.Second

// apiService is where pods reach the API server: the kubernetes Service's ClusterIP
// and port, and the API server's own address (for host-network pods, which share the
// host's loopback).
type apiService struct {
	clusterIP netip.Addr
	port      int
	apiHost   string
	apiPort   int
}

// lookupAPIService reads the kubernetes Service in namespace default, waiting for the
// API server to create it, and the API server's address from apiServerURL.
func lookupAPIService(ctx context.Context, client kubernetes.Interface, apiServerURL string) (apiService, error) {
	host, port, err := hostPort(apiServerURL)
	if err != nil {
		return apiService{}, err
	}
	var svc *corev1.Service
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, kubernetesServiceWait, true, func(ctx context.Context) (bool, error) {
		svc, last = client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return apiService{}, fmt.Errorf("reading the kubernetes Service: %w (last: %v)", err, last)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.Is4() {
		return apiService{}, fmt.Errorf("the kubernetes Service's ClusterIP %q is not an IPv4 address", svc.Spec.ClusterIP)
	}
	if len(svc.Spec.Ports) == 0 {
		return apiService{}, errors.New("the kubernetes Service has no port")
	}
	return apiService{clusterIP: ip, port: int(svc.Spec.Ports[0].Port), apiHost: host, apiPort: port}, nil
}

// hostPort splits an https URL into host and port (443 when it names none).
func hostPort(rawURL string) (string, int, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return "", 0, fmt.Errorf("parsing the API server's URL %q: %v", rawURL, err)
	}
	if u.Port() == "" {
		return u.Hostname(), 443, nil
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return "", 0, fmt.Errorf("parsing the port of the API server's URL %q: %w", rawURL, err)
	}
	return u.Hostname(), port, nil
}

// env is what the kubelet gives every container for the kubernetes Service (the
// docker-links variables it derives from any Service). Host-network pods share the
// host's loopback, where the API server itself listens: theirs name it directly.
func (s apiService) env(hostNetwork bool) []corev1.EnvVar {
	if !s.clusterIP.IsValid() { // not looked up: a node under a unit test
		return nil
	}
	host, port := s.clusterIP.String(), strconv.Itoa(s.port)
	if hostNetwork {
		host, port = s.apiHost, strconv.Itoa(s.apiPort)
	}
	addr := "tcp://" + net.JoinHostPort(host, port)
	prefix := "KUBERNETES_PORT_" + port + "_TCP"
	return []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: host},
		{Name: "KUBERNETES_SERVICE_PORT", Value: port},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: port},
		{Name: "KUBERNETES_PORT", Value: addr},
		{Name: prefix, Value: addr},
		{Name: prefix + "_PROTO", Value: "tcp"},
		{Name: prefix + "_PORT", Value: port},
		{Name: prefix + "_ADDR", Value: host},
	}
}

// apiRelay passes the connections pods make to the kubernetes Service on to the API
// server.
type apiRelay struct {
	ln     net.Listener
	target string
	log    logr.Logger

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// serveAPIService gives the bridge the Service's ClusterIP and relays what pods send
// to it, until close.
func serveAPIService(bridge string, s apiService, log logr.Logger) (*apiRelay, error) {
	link, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil, fmt.Errorf("looking up bridge %s: %w", bridge, err)
	}
	if err := netlink.AddrReplace(link, &netlink.Addr{IPNet: ipNet(s.clusterIP, 32)}); err != nil {
		return nil, fmt.Errorf("giving bridge %s the kubernetes Service's address %s: %w", bridge, s.clusterIP, err)
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = unix.BindToDevice(int(fd), bridge) }); err != nil {
			return err
		}
		return serr
	}}
	addr := netip.AddrPortFrom(s.clusterIP, uint16(s.port)).String()
	ln, err := lc.Listen(context.Background(), "tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the kubernetes Service on %s (bridge %s): %w", addr, bridge, err)
	}
	r := &apiRelay{ln: ln, target: net.JoinHostPort(s.apiHost, strconv.Itoa(s.apiPort)), log: log, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	log.Info("Serving the kubernetes Service", "address", addr, "apiServer", r.target)
	return r, nil
}

// accept relays each connection until the listener closes.
func (r *apiRelay) accept() {
	defer r.wg.Done()
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.log.Error(err, "Accepting a connection to the kubernetes Service")
			}
			return
		}
		r.wg.Add(1)
		go r.relay(conn)
	}
}

// relay copies both ways between a pod's connection and a new one to the API server.
func (r *apiRelay) relay(conn net.Conn) {
	defer r.wg.Done()
	upstream, err := net.DialTimeout("tcp", r.target, 10*time.Second)
	if err != nil {
		r.log.Error(err, "Reaching the API server for a pod", "pod", conn.RemoteAddr().String())
		conn.Close()
		return
	}
	if !r.track(conn, upstream) {
		return
	}
	defer r.untrack(conn, upstream)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, conn)
	go pipe(conn, upstream)
	<-done
	<-done
}

// track records a live pair, or closes it if the relay is closing.
func (r *apiRelay) track(conns ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		r.conns[c] = struct{}{}
	}
	return true
}

// untrack closes and forgets a pair.
func (r *apiRelay) untrack(conns ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(r.conns, c)
	}
}

// close stops listening, ends every relayed connection and waits for them. The
// address goes with the bridge.
func (r *apiRelay) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
