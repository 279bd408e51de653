package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podAPI reads what a pod refers to from the API server, in the pod's namespace.
type podAPI struct {
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	// allowed are the host paths a claim's volume may lie under.
	allowed []string
}

// ConfigMap implements envSources.
func (a podAPI) ConfigMap(name string) (*corev1.ConfigMap, error) {
	return a.client.CoreV1().ConfigMaps(a.ns).Get(a.ctx, name, metav1.GetOptions{})
}

// Secret implements envSources.
func (a podAPI) Secret(name string) (*corev1.Secret, error) {
	return a.client.CoreV1().Secrets(a.ns).Get(a.ctx, name, metav1.GetOptions{})
}

// configMapOrNil returns nil for a missing ConfigMap.
func (a podAPI) configMapOrNil(name string) (*corev1.ConfigMap, error) {
	cm, err := a.ConfigMap(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// secretOrNil returns nil for a missing Secret.
func (a podAPI) secretOrNil(name string) (*corev1.Secret, error) {
	s, err := a.Secret(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// token requests a service-account token bound to the pod, as the kubelet does for a
// projected serviceAccountToken source.
func (a podAPI) token(pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	resp, err := a.client.CoreV1().ServiceAccounts(a.ns).CreateToken(a.ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for service account %s: %w", sa, err)
	}
	return resp.Status.Token, nil
}

// claimPath returns the host directory of a bound claim's volume: a hostPath or local
// PersistentVolume, such as the local provisioner creates.
func (a podAPI) claimPath(claim string) (string, error) {
	pvc, err := a.client.CoreV1().PersistentVolumeClaims(a.ns).Get(a.ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading claim %s: %w", claim, err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("claim %s is not bound", claim)
	}
	pv, err := a.client.CoreV1().PersistentVolumes().Get(a.ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading volume %s of claim %s: %w", pvc.Spec.VolumeName, claim, err)
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("volume %s of claim %s is neither hostPath nor local", pv.Name, claim)
	}
	// A volume anyone with the right to create PersistentVolumes made could name /.
	if !hostPathAllowed(path, a.allowed) {
		return "", errHostPath("of claim "+claim, path, a.allowed)
	}
	return path, nil
}

// prepareVolumes makes every volume of a pod ready on the host under dir and returns
// the host path of each, by name.
func prepareVolumes(api podAPI, pod *corev1.Pod, fields podFields, dir string) (map[string]string, error) {
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		p, err := prepareVolume(api, pod, fields, v, filepath.Join(dir, v.Name))
		if err != nil {
			return nil, fmt.Errorf("preparing volume %s: %w", v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

// prepareVolume makes one volume ready and returns its host path.
func prepareVolume(api podAPI, pod *corev1.Pod, fields podFields, v *corev1.Volume, dir string) (string, error) {
	switch {
	case v.EmptyDir != nil:
		if v.EmptyDir.Medium == corev1.StorageMediumMemory {
			opts := "mode=0777"
			if v.EmptyDir.SizeLimit != nil && !v.EmptyDir.SizeLimit.IsZero() {
				opts += fmt.Sprintf(",size=%d", v.EmptyDir.SizeLimit.Value())
			}
			if mounted, _ := MountsUnder(dir); len(mounted) == 0 {
				if err := mountTmpfs(dir, opts); err != nil {
					return "", err
				}
			}
			return dir, nil
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return "", err
		}
		return dir, os.Chmod(dir, 0o777)
	case v.HostPath != nil:
		return v.HostPath.Path, checkHostPath(v.HostPath)
	case v.ConfigMap != nil, v.Secret != nil, v.DownwardAPI != nil, v.Projected != nil:
		p, err := project(api, pod, fields, asProjected(v))
		if err != nil {
			return "", err
		}
		return dir, p.write(dir)
	case v.PersistentVolumeClaim != nil:
		return api.claimPath(v.PersistentVolumeClaim.ClaimName)
	case v.Ephemeral != nil:
		// The ephemeral volume controller names the claim after the pod and volume.
		return api.claimPath(pod.Name + "-" + v.Name)
	}
	return "", fmt.Errorf("volume %s has a type this node does not support", v.Name)
}

// asProjected expresses a configMap, secret or downwardAPI volume as the projected
// volume with that one source, which the kubelet fills the same way.
func asProjected(v *corev1.Volume) *corev1.ProjectedVolumeSource {
	switch {
	case v.ConfigMap != nil:
		return &corev1.ProjectedVolumeSource{DefaultMode: v.ConfigMap.DefaultMode, Sources: []corev1.VolumeProjection{{
			ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items, Optional: v.ConfigMap.Optional},
		}}}
	case v.Secret != nil:
		return &corev1.ProjectedVolumeSource{DefaultMode: v.Secret.DefaultMode, Sources: []corev1.VolumeProjection{{
			Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName}, Items: v.Secret.Items, Optional: v.Secret.Optional},
		}}}
	case v.DownwardAPI != nil:
		return &corev1.ProjectedVolumeSource{DefaultMode: v.DownwardAPI.DefaultMode, Sources: []corev1.VolumeProjection{{
			DownwardAPI: &corev1.DownwardAPIProjection{Items: v.DownwardAPI.Items},
		}}}
	}
	return v.Projected
}

// project gathers the sources of a projected volume.
func project(api podAPI, pod *corev1.Pod, fields podFields, src *corev1.ProjectedVolumeSource) (projection, error) {
	p := projection{}
	for _, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			cm, err := api.configMapOrNil(s.ConfigMap.Name)
			if err != nil {
				return nil, err
			}
			if err := projectKeys(p, "ConfigMap", s.ConfigMap.Name, configMapBytes(cm), s.ConfigMap.Items, src.DefaultMode, isOptional(s.ConfigMap.Optional)); err != nil {
				return nil, err
			}
		case s.Secret != nil:
			sec, err := api.secretOrNil(s.Secret.Name)
			if err != nil {
				return nil, err
			}
			if err := projectKeys(p, "Secret", s.Secret.Name, secretBytes(sec), s.Secret.Items, src.DefaultMode, isOptional(s.Secret.Optional)); err != nil {
				return nil, err
			}
		case s.DownwardAPI != nil:
			if err := projectDownwardAPI(p, pod, fields, s.DownwardAPI.Items, src.DefaultMode); err != nil {
				return nil, err
			}
		case s.ServiceAccountToken != nil:
			tok, err := api.token(pod, s.ServiceAccountToken)
			if err != nil {
				return nil, err
			}
			p.add(s.ServiceAccountToken.Path, []byte(tok), nil, src.DefaultMode)
		}
	}
	return p, nil
}

// checkHostPath creates or checks a hostPath volume's path according to its type.
func checkHostPath(hp *corev1.HostPathVolumeSource) error {
	typ := corev1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	switch typ {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathUnset:
		return nil
	}
	fi, err := os.Stat(hp.Path)
	if err != nil {
		return fmt.Errorf("hostPath %s: %w", hp.Path, err)
	}
	want := map[corev1.HostPathType]func(os.FileMode) bool{
		corev1.HostPathDirectory: func(m os.FileMode) bool { return m.IsDir() },
		corev1.HostPathFile:      func(m os.FileMode) bool { return m.IsRegular() },
		corev1.HostPathSocket:    func(m os.FileMode) bool { return m&os.ModeSocket != 0 },
		corev1.HostPathCharDev:   func(m os.FileMode) bool { return m&os.ModeCharDevice != 0 },
		corev1.HostPathBlockDev:  func(m os.FileMode) bool { return m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0 },
	}[typ]
	if want != nil && !want(fi.Mode()) {
		return fmt.Errorf("hostPath %s is not a %s", hp.Path, typ)
	}
	return nil
}

// volumeMounts returns a container's volume mounts as OCI bind mounts, parents before
// the mounts nested in them. A subPath (or subPathExpr, expanded against env) is created
// in the volume when missing.
func volumeMounts(c *corev1.Container, paths map[string]string, env []string) ([]specs.Mount, error) {
	lookup := envLookup(env)
	var mounts []specs.Mount
	for _, vm := range c.VolumeMounts {
		src, ok := paths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("%w: volume mount %s names no volume of the pod", errConfig, vm.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, lookup)
		}
		if sub != "" {
			clean := filepath.Clean(sub)
			if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				return nil, fmt.Errorf("%w: subPath %q leaves volume %s", errConfig, sub, vm.Name)
			}
			src = filepath.Join(src, clean)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, fmt.Errorf("creating subPath %s: %w", sub, err)
				}
			}
		}
		opts := []string{"rbind", "rw"}
		if vm.ReadOnly {
			opts = []string{"rbind", "ro"}
		}
		mounts = append(mounts, specs.Mount{Destination: vm.MountPath, Type: "bind", Source: src, Options: opts})
	}
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Destination) < depth(mounts[j].Destination) })
	return mounts, nil
}

// depth counts the components of a path.
func depth(p string) int { return len(strings.Split(strings.Trim(filepath.Clean(p), "/"), "/")) }
