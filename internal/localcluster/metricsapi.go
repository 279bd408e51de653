package localcluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// metricsNamespace holds the metrics API's Service and the binding that lets
// metrics-server read the API server's request-header settings.
const metricsNamespace = metav1.NamespaceSystem

// metricsAPIService is the APIService that sends metrics.k8s.io to metrics-server.
const metricsAPIService = "v1beta1.metrics.k8s.io"

// apiServiceKind is the APIService's kind: no typed client is needed for the one
// object local mode writes.
var apiServiceKind = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// metricsServerRules are what metrics-server reads: the Nodes and Pods it reports on,
// and each kubelet's resource metrics (nodes/metrics, which the kubelet asks the API
// server about). Nothing it writes.
var metricsServerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}},
}

// metricsReaderRole lets whoever may view a namespace read its pods' metrics: it is
// aggregated into the view, edit and admin ClusterRoles.
var metricsReaderRole = rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "local-cluster:aggregated-metrics-reader", Labels: map[string]string{
		"rbac.authorization.k8s.io/aggregate-to-view":  "true",
		"rbac.authorization.k8s.io/aggregate-to-edit":  "true",
		"rbac.authorization.k8s.io/aggregate-to-admin": "true",
	}},
	Rules: []rbacv1.PolicyRule{{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list", "watch"}}},
}

// desired is an object and what makes it as wanted, for CreateOrUpdate.
type desired struct {
	obj    client.Object
	mutate func()
}

// ensureMetricsServerRBAC grants metrics-server its rules, the delegation of its
// clients' authentication and authorization to the API server (system:auth-delegator),
// and the reading of the request-header settings in kube-system.
func ensureMetricsServerRBAC(ctx context.Context, c client.Client) error {
	user := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: metricsServerUser}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsServerUser}}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: metricsReaderRole.Name}}
	authReader := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: metricsServerUser + ":auth-reader", Namespace: metricsNamespace}}
	objects := []desired{
		{role, func() { role.Rules = metricsServerRules }},
		{reader, func() { reader.Labels, reader.Rules = metricsReaderRole.Labels, metricsReaderRole.Rules }},
		{authReader, func() {
			authReader.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}
			authReader.Subjects = user
		}},
	}
	for _, b := range []struct{ name, role string }{
		{metricsServerUser, metricsServerUser},
		{metricsServerUser + ":auth-delegator", "system:auth-delegator"},
	} {
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.name}}
		objects = append(objects, desired{binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role}
			binding.Subjects = user
		}})
	}
	for _, o := range objects {
		if _, err := controllerutil.CreateOrUpdate(ctx, c, o.obj, func() error { o.mutate(); return nil }); err != nil {
			return fmt.Errorf("writing the RBAC of metrics-server (%T %s): %w", o.obj, o.obj.GetName(), err)
		}
	}
	return nil
}

// ensureMetricsAPI registers metrics-server, listening at endpoint on the host, as
// the metrics API: a Service without selector whose one endpoint is the host's
// address, and the APIService naming it, whose caBundle is the serving CA's.
func ensureMetricsAPI(ctx context.Context, c client.Client, endpoint netip.AddrPort, caPEM []byte) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: metricsServerName, Namespace: metricsNamespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, svc, func() error {
		svc.Labels = map[string]string{"k8s-app": metricsServerName}
		svc.Spec.Ports = []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt(int(endpoint.Port()))}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing Service %s/%s: %w", metricsNamespace, metricsServerName, err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: metricsServerName + "-host", Namespace: metricsNamespace}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, slice, func() error {
		slice.Labels = map[string]string{discoveryv1.LabelServiceName: metricsServerName, discoveryv1.LabelManagedBy: "tfk8s-local"}
		slice.AddressType = discoveryv1.AddressTypeIPv4
		slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{endpoint.Addr().String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
		slice.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("https"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(endpoint.Port()))}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the endpoints of Service %s/%s: %w", metricsNamespace, metricsServerName, err)
	}
	api := &unstructured.Unstructured{}
	api.SetGroupVersionKind(apiServiceKind)
	api.SetName(metricsAPIService)
	_, err = controllerutil.CreateOrUpdate(ctx, c, api, func() error {
		api.Object["spec"] = map[string]any{
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"service":              map[string]any{"namespace": metricsNamespace, "name": metricsServerName, "port": int64(443)},
			"caBundle":             base64.StdEncoding.EncodeToString(caPEM),
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing APIService %s: %w", metricsAPIService, err)
	}
	return nil
}

// apiServiceAvailable wants the metrics APIService's Available condition True: the API
// server reaches metrics-server through it.
func apiServiceAvailable(ctx context.Context, c client.Client) error {
	api := &unstructured.Unstructured{}
	api.SetGroupVersionKind(apiServiceKind)
	if err := c.Get(ctx, client.ObjectKey{Name: metricsAPIService}, api); err != nil {
		return err
	}
	conditions, _, _ := unstructured.NestedSlice(api.Object, "status", "conditions")
	for _, raw := range conditions {
		cond, _ := raw.(map[string]any)
		if cond["type"] != "Available" {
			continue
		}
		if cond["status"] == "True" {
			return nil
		}
		return fmt.Errorf("not available: %v: %v", cond["reason"], cond["message"])
	}
	return errors.New("no Available condition yet")
}
