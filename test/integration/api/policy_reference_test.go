package api

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// allowList is the notebooks' policy (config/policy/notebook-tfjob-policy.yaml) on
// CREATE, written again in Go for the fuzz test to hold the CEL to: a notebook's
// account user, its own ServiceAccount and S3 Secret, and the replica ceiling. The
// account may read no Secret, as a notebook's may not; no priority class or
// toleration is allowed, as by default.
type allowList struct {
	user, ownAccount, ownSecret string
	maxReplicas                 int32
}

// refusedFields are the fields for which the policy refuses job, none if it accepts it.
func (p allowList) refusedFields(job *tfv1.TFJob) []string {
	var refused []string
	if job.Spec.Storage != nil && job.Spec.Storage.SecretRef.Name != p.ownSecret {
		refused = append(refused, "spec.storage.secretRef.name")
	}
	if job.Spec.Networking.Mode == tfv1.NetworkingModeHostNetwork {
		refused = append(refused, "spec.networking.mode")
	}
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.PriorityClass != "" {
		refused = append(refused, "spec.runPolicy.schedulingPolicy.priorityClass")
	}
	if job.Annotations[tfv1.AnnotationCreator] != p.user {
		refused = append(refused, "metadata.annotations[tfk8s.io/creator]")
	}
	var replicas int32
	types := make([]string, 0, len(job.Spec.TFReplicaSpecs))
	for t, rs := range job.Spec.TFReplicaSpecs {
		types = append(types, string(t))
		replicas += ptrOr(rs.Replicas, 1)
	}
	if replicas > p.maxReplicas {
		refused = append(refused, "spec.tfReplicaSpecs")
	}
	sort.Strings(types)
	for _, t := range types {
		tmpl := job.Spec.TFReplicaSpecs[tfv1.ReplicaType(t)].Template
		path := "spec.tfReplicaSpecs." + t + ".template."
		for k, v := range tmpl.Annotations {
			if strings.HasPrefix(k, "container.apparmor.security.beta.kubernetes.io/") && v == "unconfined" {
				refused = append(refused, path+"metadata.annotations["+k+"]")
			}
		}
		refused = append(refused, p.refusedPod(path+"spec", &tmpl.Spec)...)
	}
	return refused
}

// refusedPod are the fields of a template's pod spec at path the policy refuses.
func (p allowList) refusedPod(path string, spec *corev1.PodSpec) []string {
	var refused []string
	add := func(cond bool, field string) {
		if cond {
			refused = append(refused, path+field)
		}
	}
	add(!slices.Contains([]string{"", "default", p.ownAccount}, spec.ServiceAccountName), ".serviceAccountName")
	add(!slices.Contains([]string{"", "default", p.ownAccount}, spec.DeprecatedServiceAccount), ".serviceAccount")
	add(spec.HostNetwork, ".hostNetwork")
	add(spec.HostPID, ".hostPID")
	add(spec.HostIPC, ".hostIPC")
	add(spec.NodeName != "", ".nodeName")
	add(spec.PriorityClassName != "", ".priorityClassName")
	add(ptrOr(spec.RuntimeClassName, "") != "", ".runtimeClassName")
	add(ptrOr(spec.ShareProcessNamespace, false), ".shareProcessNamespace")
	for i := range spec.Tolerations {
		add(true, fmt.Sprintf(".tolerations[%d]", i))
	}
	for i, s := range spec.ImagePullSecrets {
		add(s.Name != p.ownSecret, fmt.Sprintf(".imagePullSecrets[%d].name", i))
	}
	if sc := spec.SecurityContext; sc != nil {
		add(sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined, ".securityContext.seccompProfile")
		add(sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined, ".securityContext.appArmorProfile")
	}
	for i, v := range spec.Volumes {
		refused = append(refused, p.refusedVolume(fmt.Sprintf("%s.volumes[%d]", path, i), v.VolumeSource)...)
	}
	for i := range spec.Containers {
		refused = append(refused, p.refusedContainer(fmt.Sprintf("%s.containers[%d]", path, i), &spec.Containers[i])...)
	}
	for i := range spec.InitContainers {
		refused = append(refused, p.refusedContainer(fmt.Sprintf("%s.initContainers[%d]", path, i), &spec.InitContainers[i])...)
	}
	return refused
}

// refusedVolume are the fields of a volume at path the policy refuses: its type, if
// not on the list, or a Secret the account may not read, a projected source not on
// the list, an ephemeral claim's data source.
func (p allowList) refusedVolume(path string, v corev1.VolumeSource) []string {
	var refused []string
	switch {
	case v.HostPath != nil:
		refused = append(refused, path+".hostPath")
	case v.Secret != nil:
		if v.Secret.SecretName != p.ownSecret {
			refused = append(refused, path+".secret.secretName")
		}
	case v.Projected != nil:
		for i, s := range v.Projected.Sources {
			src := fmt.Sprintf("%s.projected.sources[%d]", path, i)
			switch {
			case s.Secret != nil && s.Secret.Name != p.ownSecret:
				refused = append(refused, src+".secret.name")
			case s.ServiceAccountToken != nil:
				refused = append(refused, src+".serviceAccountToken")
			case s.Secret == nil && s.ConfigMap == nil && s.DownwardAPI == nil:
				refused = append(refused, src)
			}
		}
	case v.Ephemeral != nil:
		if t := v.Ephemeral.VolumeClaimTemplate; t != nil && t.Spec.DataSource != nil {
			refused = append(refused, path+".ephemeral.volumeClaimTemplate.spec.dataSource")
		}
		if t := v.Ephemeral.VolumeClaimTemplate; t != nil && t.Spec.DataSourceRef != nil {
			refused = append(refused, path+".ephemeral.volumeClaimTemplate.spec.dataSourceRef")
		}
	case v.EmptyDir != nil, v.ConfigMap != nil, v.DownwardAPI != nil, v.PersistentVolumeClaim != nil:
	case v.NFS != nil:
		refused = append(refused, path+".nfs")
	case v.CSI != nil:
		refused = append(refused, path+".csi")
	case v.GitRepo != nil:
		refused = append(refused, path+".gitRepo")
	default:
		refused = append(refused, path)
	}
	return refused
}

// refusedContainer are the fields of a container at path the policy refuses.
func (p allowList) refusedContainer(path string, c *corev1.Container) []string {
	var refused []string
	add := func(cond bool, field string) {
		if cond {
			refused = append(refused, path+field)
		}
	}
	for i, e := range c.EnvFrom {
		add(e.SecretRef != nil && e.SecretRef.Name != p.ownSecret, fmt.Sprintf(".envFrom[%d].secretRef.name", i))
	}
	for i, e := range c.Env {
		add(e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name != p.ownSecret,
			fmt.Sprintf(".env[%d].valueFrom.secretKeyRef.name", i))
	}
	for _, port := range c.Ports {
		add(port.HostPort != 0, ".ports.hostPort")
	}
	if sc := c.SecurityContext; sc != nil {
		add(ptrOr(sc.Privileged, false), ".securityContext.privileged")
		add(sc.Capabilities != nil && len(sc.Capabilities.Add) > 0, ".securityContext.capabilities.add")
		add(sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined, ".securityContext.seccompProfile")
		add(sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined, ".securityContext.appArmorProfile")
		add(sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount, ".securityContext.procMount")
	}
	return refused
}

// ptrOr is *v, or def if v is nil.
func ptrOr[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}
