package api

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestNotebookPolicyAgreesWithItsReference: 300 TFJobs with random volumes, Secret
// references, security and scheduling fields, generated from a fixed seed, each
// created (dry run) as a notebook's account. The API server's answer and the Go
// reference of the allow-list below (refusedFields) must agree on every one: refused
// or not, and a refusal names one of the fields the reference names.
func TestNotebookPolicyAgreesWithItsReference(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	nb := notebookAccount(t, ns, "nb", true)
	waitNotebookPolicy(t, nb, ns)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(37, 2026))
	ref := allowList{user: "system:serviceaccount:" + ns + ":nb", ownAccount: "nb", ownSecret: "nb-s3", maxReplicas: 64}
	refusedCount := 0
	for i := range 300 {
		job := randomJob(rng, ns, fmt.Sprintf("fuzz-%d", i), ref.user)
		want := ref.refusedFields(job)
		err := nb.Create(ctx, job.DeepCopy(), client.DryRunAll)
		agree := (err == nil) == (len(want) == 0)
		if err != nil && agree && !namesOneOf(err.Error(), want) {
			agree = false
		}
		if !agree {
			y, _ := yaml.Marshal(job)
			t.Fatalf("job %d: the API server said %v; the reference refuses %q:\n%s", i, err, want, y)
		}
		if err != nil {
			refusedCount++
		}
	}
	// Both answers must be common, or the agreement shows little.
	if refusedCount < 60 || refusedCount > 240 {
		t.Errorf("%d of 300 jobs refused: the generator should refuse between 60 and 240", refusedCount)
	}
	t.Logf("%d of 300 jobs refused, %d accepted; the API server and the reference agree on all", refusedCount, 300-refusedCount)
}

// namesOneOf reports whether msg names one of fields as a refusal does ("FIELD: ").
func namesOneOf(msg string, fields []string) bool {
	for _, f := range fields {
		if strings.Contains(msg, f+": ") {
			return true
		}
	}
	return false
}

// pick is true one time in n.
func pick(rng *rand.Rand, n int) bool { return rng.IntN(n) == 0 }

// randomJob is nb's job as tfk8s submit makes it, with each risky field set one time
// in about twelve.
func randomJob(rng *rand.Rand, ns, name, user string) *tfv1.TFJob {
	job := notebookJob(ns, name)
	rs := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker]
	rs.Replicas = ptr.To(int32(1 + rng.IntN(40)))
	if pick(rng, 3) {
		ps := rs.DeepCopy()
		ps.Replicas = ptr.To(int32(1 + rng.IntN(30)))
		job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS] = ps
	}
	spec := &rs.Template.Spec
	c := &spec.Containers[0]
	n := 12
	for j := range rng.IntN(3) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", j), VolumeSource: randomVolume(rng)})
	}
	if pick(rng, n) {
		spec.ServiceAccountName = []string{"nb", "default", "builder"}[rng.IntN(3)]
	}
	if pick(rng, n) {
		spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: []string{"nb-s3", "registry"}[rng.IntN(2)]}}
	}
	if pick(rng, n) {
		c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: []string{"nb-s3", "victim"}[rng.IntN(2)]}}}}
	}
	randomPodFields(rng, n, job, spec)
	c.SecurityContext = randomSecurityContext(rng, n)
	if pick(rng, n) {
		c.Ports = []corev1.ContainerPort{{ContainerPort: 2222, HostPort: int32(rng.IntN(2) * 2222)}}
	}
	if pick(rng, n) {
		job.Annotations[tfv1.AnnotationCreator] = []string{"", "someone", user}[rng.IntN(3)]
	}
	return job
}

// randomPodFields sets the pod's scheduling, host and profile fields at random.
func randomPodFields(rng *rand.Rand, n int, job *tfv1.TFJob, spec *corev1.PodSpec) {
	if pick(rng, n) {
		spec.NodeName = []string{"", "node-1"}[rng.IntN(2)]
	}
	if pick(rng, n) {
		spec.PriorityClassName = []string{"", "high"}[rng.IntN(2)]
	}
	if pick(rng, n) {
		job.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{PriorityClass: []string{"", "high"}[rng.IntN(2)]}
	}
	if pick(rng, n) {
		spec.RuntimeClassName = ptr.To([]string{"", "kata"}[rng.IntN(2)])
	}
	if pick(rng, n) {
		spec.ShareProcessNamespace = ptr.To(rng.IntN(2) == 0)
	}
	if pick(rng, n) {
		spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	}
	if pick(rng, n) {
		spec.HostNetwork = true
	}
	if pick(rng, n) {
		spec.HostPID = rng.IntN(2) == 0
	}
	if pick(rng, n) {
		seccomp := []corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}[rng.IntN(2)]
		armor := []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}[rng.IntN(2)]
		spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: seccomp},
			AppArmorProfile: &corev1.AppArmorProfile{Type: armor}}
	}
	if pick(rng, n) {
		job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Annotations = map[string]string{
			"container.apparmor.security.beta.kubernetes.io/tensorflow": []string{"runtime/default", "unconfined"}[rng.IntN(2)]}
	}
}

// randomSecurityContext is a container's, or nil.
func randomSecurityContext(rng *rand.Rand, n int) *corev1.SecurityContext {
	if !pick(rng, n/3) {
		return nil
	}
	sc := &corev1.SecurityContext{}
	switch rng.IntN(5) {
	case 0:
		sc.Privileged = ptr.To(rng.IntN(2) == 0)
	case 1:
		sc.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}[:rng.IntN(2)]}
	case 2:
		sc.ProcMount = ptr.To([]corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}[rng.IntN(2)])
	case 3:
		sc.SeccompProfile = &corev1.SeccompProfile{Type: []corev1.SeccompProfileType{corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}[rng.IntN(2)]}
	default:
		sc.AppArmorProfile = &corev1.AppArmorProfile{Type: []corev1.AppArmorProfileType{corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined}[rng.IntN(2)]}
	}
	return sc
}

// randomVolume is a volume source of one of the types a pod may have, plain ones
// more often.
func randomVolume(rng *rand.Rand) corev1.VolumeSource {
	claim := func(from bool) corev1.VolumeSource {
		spec := corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
		if from {
			spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		}
		return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: spec}}}
	}
	sources := []func() corev1.VolumeSource{
		func() corev1.VolumeSource { return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}} },
		func() corev1.VolumeSource {
			return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}
		},
		func() corev1.VolumeSource {
			return corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: []string{"nb-s3", "victim"}[rng.IntN(2)]}}
		},
		func() corev1.VolumeSource { return corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}} },
		func() corev1.VolumeSource { return randomProjected(rng) },
		func() corev1.VolumeSource { return claim(rng.IntN(3) == 0) },
		func() corev1.VolumeSource {
			return corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}}
		},
		func() corev1.VolumeSource {
			return corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d.example.com"}}
		},
		func() corev1.VolumeSource {
			return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}
		},
		func() corev1.VolumeSource {
			return corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/r"}}
		},
	}
	// The first six, the allowed types, come up twice as often as the others.
	i := rng.IntN(len(sources) + 6)
	if i >= len(sources) {
		i -= len(sources)
	}
	return sources[i]()
}

// randomProjected is a projected volume of one or two random sources.
func randomProjected(rng *rand.Rand) corev1.VolumeSource {
	var sources []corev1.VolumeProjection
	for range 1 + rng.IntN(2) {
		switch rng.IntN(5) {
		case 0:
			sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}})
		case 1:
			sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: []string{"nb-s3", "victim"}[rng.IntN(2)]}}})
		case 2:
			sources = append(sources, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{}})
		default:
			sources = append(sources, corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t", Audience: "vault"}})
		}
	}
	return corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}
}
