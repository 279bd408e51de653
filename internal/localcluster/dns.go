package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startDNS starts CoreDNS on the bridge (again if restart) and waits until it resolves
// the kubernetes Service, then points the kube-dns Service at it.
func startDNS(ctx context.Context, l launcher, corefilePath, kubeconfig string, cfg *rest.Config, restart bool) error {
	corefile, err := renderCorefile(l.opts, kubeconfig)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(corefilePath, corefile, 0o644); err != nil {
		return err
	}
	p, _, err := l.ensureRunning(compDNS, []string{"-conf", corefilePath}, nil, restart)
	if err != nil {
		return err
	}
	br, _ := bridgeIP(l.opts.PodCIDR)
	server := netip.AddrPortFrom(br, uint16(l.opts.Ports.DNS)).String()
	name := "kubernetes.default.svc." + l.opts.ClusterDomain + "."
	err = l.waitReady(ctx, p, "DNS on "+server+" to resolve "+name, func(ctx context.Context) error {
		_, err := LookupHost(ctx, server, name)
		return err
	})
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	return ensureDNSService(ctx, c, br, l.opts.Ports.DNS)
}

// LookupHost resolves name through the DNS server at server (host:port) alone.
func LookupHost(ctx context.Context, server, name string) ([]string, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
	return r.LookupHost(ctx, name)
}

// ensureDNSService creates the kube-dns Service and its endpoints: CoreDNS on the
// host bridge, reached by the pods through the Service's ClusterIP.
func ensureDNSService(ctx context.Context, c client.Client, host netip.Addr, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNSIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt(port)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt(port)},
			},
		},
	}
	// Looked up first: a Service whose ClusterIP is taken is refused for its IP
	// before its name.
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}); apierrors.IsNotFound(err) {
		err = c.Create(ctx, svc)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Service kube-system/kube-dns: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("looking up Service kube-system/kube-dns: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-dns-host", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns", discoveryv1.LabelManagedBy: "tfk8s-local"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(int32(port))},
			{Name: ptr.To("dns-tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(port))},
		},
	}
	if err := c.Create(ctx, slice); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the endpoints of Service kube-system/kube-dns: %w", err)
	}
	return nil
}
