package node

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultPath is the PATH of a container that sets none: the image's PATH, were there an
// image; here the host's usual one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containerPath is the default PATH with binDir, when set, first.
func containerPath(binDir string) string {
	if binDir == "" {
		return defaultPath
	}
	return binDir + ":" + defaultPath
}

// podFields are the values of a pod's fields that the downward API reads from the node
// rather than the pod object.
type podFields struct {
	PodIPs          []string
	HostIPs         []string
	NodeAllocatable corev1.ResourceList
}

// envSources fetches the ConfigMaps and Secrets that env and envFrom refer to. A missing
// object is reported with an error apierrors.IsNotFound recognises.
type envSources interface {
	ConfigMap(name string) (*corev1.ConfigMap, error)
	Secret(name string) (*corev1.Secret, error)
}

// errConfig marks a container whose configuration refers to something missing or
// invalid: the kubelet's CreateContainerConfigError.
var errConfig = errors.New("container configuration")

// containerEnv resolves a container's environment as the kubelet does: base variables
// (PATH, HOSTNAME and the node's additions, as an image's would be), then envFrom in
// order, then env with $(VAR) references expanded against what precedes; a later
// definition replaces an earlier one in place.
func containerEnv(pod *corev1.Pod, c *corev1.Container, fields podFields, src envSources, base []corev1.EnvVar) ([]string, error) {
	env := newEnvList()
	for _, v := range base {
		env.set(v.Name, v.Value)
	}
	for _, from := range c.EnvFrom {
		data, optional, err := envFromData(from, src)
		if err != nil {
			if optional && apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("%w: %w", errConfig, err)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if name := from.Prefix + k; isEnvVarName(name) {
				env.set(name, data[k])
			}
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			env.set(v.Name, expand(v.Value, env.lookup))
			continue
		}
		value, skip, err := envValueFrom(pod, c, v.ValueFrom, fields, src)
		if err != nil {
			return nil, fmt.Errorf("%w: env %s: %w", errConfig, v.Name, err)
		}
		if !skip {
			env.set(v.Name, value)
		}
	}
	return env.list(), nil
}

// envFromData returns the key/value pairs of one envFrom source.
func envFromData(from corev1.EnvFromSource, src envSources) (map[string]string, bool, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(from.ConfigMapRef.Name)
		if err != nil {
			return nil, isOptional(from.ConfigMapRef.Optional), fmt.Errorf("reading ConfigMap %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, false, nil
	case from.SecretRef != nil:
		s, err := src.Secret(from.SecretRef.Name)
		if err != nil {
			return nil, isOptional(from.SecretRef.Optional), fmt.Errorf("reading Secret %s: %w", from.SecretRef.Name, err)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, false, nil
	}
	return nil, false, nil
}

// envValueFrom resolves one valueFrom; skip is true for an optional key that is missing.
func envValueFrom(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, fields podFields, src envSources) (value string, skip bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := fieldRefValue(pod, fields, from.FieldRef.FieldPath)
		return v, false, err
	case from.ResourceFieldRef != nil:
		v, err := resourceRefValue(pod, c.Name, fields, from.ResourceFieldRef)
		return v, false, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		return keyRefValue("ConfigMap", ref.Name, ref.Key, ref.Optional, func() (map[string]string, error) {
			cm, err := src.ConfigMap(ref.Name)
			if err != nil {
				return nil, err
			}
			return cm.Data, nil
		})
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		return keyRefValue("Secret", ref.Name, ref.Key, ref.Optional, func() (map[string]string, error) {
			s, err := src.Secret(ref.Name)
			if err != nil {
				return nil, err
			}
			data := make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
			return data, nil
		})
	}
	return "", false, errors.New("valueFrom names no source")
}

// keyRefValue reads one key of a ConfigMap or Secret fetched by read; skip is true when
// the object or key is missing and the reference optional.
func keyRefValue(kind, name, key string, optional *bool, read func() (map[string]string, error)) (value string, skip bool, err error) {
	data, err := read()
	if err != nil {
		if isOptional(optional) && apierrors.IsNotFound(err) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	v, ok := data[key]
	if !ok {
		if isOptional(optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("key %s not found in %s %s", key, kind, name)
	}
	return v, false, nil
}

// fieldRefValue returns the value of a downward API field path.
func fieldRefValue(pod *corev1.Pod, fields podFields, path string) (string, error) {
	if name, key, ok := subscript(path); ok {
		switch name {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("unsupported field path %q", path)
	}
	first := func(list []string) string {
		if len(list) == 0 {
			return ""
		}
		return list[0]
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(fields.PodIPs), nil
	case "status.podIPs":
		return strings.Join(fields.PodIPs, ","), nil
	case "status.hostIP":
		return first(fields.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(fields.HostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported field path %q", path)
}

// subscript splits `metadata.labels['key']` into its map and key.
func subscript(path string) (name, key string, ok bool) {
	open := strings.Index(path, "['")
	if open < 0 || !strings.HasSuffix(path, "']") {
		return "", "", false
	}
	return path[:open], path[open+2 : len(path)-2], true
}

// formatMap renders labels or annotations as the downward API does: key="value" lines,
// sorted by key.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceRefValue returns a container's limit or request divided by the divisor,
// rounded up; an unset limit reads as the node's allocatable amount.
func resourceRefValue(pod *corev1.Pod, defaultContainer string, fields podFields, ref *corev1.ResourceFieldSelector) (string, error) {
	name := ref.ContainerName
	if name == "" {
		name = defaultContainer
	}
	var c *corev1.Container
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("container %q not found", name)
	}
	kind, res, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(res)]
	if !ok && kind == "limits" {
		if q, ok = fields.NodeAllocatable[corev1.ResourceName(res)]; !ok {
			return "", fmt.Errorf("no %s on the node", res)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if res == string(corev1.ResourceCPU) {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}

// expand replaces $(VAR) references in s with lookup's value, as Kubernetes does for
// env values, commands and args: an unknown reference stays as written, and $$ escapes
// a $.
func expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

var envVarName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// isEnvVarName reports whether name is a valid environment variable name for
// Kubernetes.
func isEnvVarName(name string) bool { return envVarName.MatchString(name) }

func isOptional(b *bool) bool { return b != nil && *b }

// envList is an ordered environment where setting a name again replaces its value in
// place.
type envList struct {
	names  []string
	values map[string]string
}

func newEnvList() *envList { return &envList{values: map[string]string{}} }

func (e *envList) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *envList) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// list returns NAME=value pairs in definition order.
func (e *envList) list() []string {
	out := make([]string, 0, len(e.names))
	for _, n := range e.names {
		out = append(out, n+"="+e.values[n])
	}
	return out
}

// envLookup turns a NAME=value list back into a lookup for expand.
func envLookup(env []string) func(string) (string, bool) {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}
