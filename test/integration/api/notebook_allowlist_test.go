package api

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestNotebookJobsAllowList: the notebooks' policy is an allow-list. From a notebook's
// account, a volume of a type not on the list, a projected ServiceAccount token, a
// cloned ephemeral claim, an image pull Secret the account may not read, a node, a
// runtime class, a priority, a toleration, a shared process namespace, an unconfined
// seccomp or AppArmor profile, an unmasked /proc, more than 64 replicas, or a creator
// other than itself is refused, naming the field; the plain volumes and profiles are
// accepted. An account that is no notebook's is held to none of it.
func TestNotebookJobsAllowList(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	nb := notebookAccount(t, ns, "nb", true)
	plain := notebookAccount(t, ns, "builder", false)
	waitNotebookPolicy(t, nb, ns)

	w := "spec.tfReplicaSpecs.Worker.template.spec."
	vol := func(src corev1.VolumeSource) func(j *tfv1.TFJob) {
		return func(j *tfv1.TFJob) { worker(j).Volumes = []corev1.Volume{{Name: "v", VolumeSource: src}} }
	}
	container := func(sc *corev1.SecurityContext) func(j *tfv1.TFJob) {
		return func(j *tfv1.TFJob) { worker(j).Containers[0].SecurityContext = sc }
	}
	pod := func(sc *corev1.PodSecurityContext) func(j *tfv1.TFJob) {
		return func(j *tfv1.TFJob) { worker(j).SecurityContext = sc }
	}
	claimTemplate := func(spec corev1.PersistentVolumeClaimSpec) corev1.VolumeSource {
		spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		spec.Resources = corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
		return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: spec}}}
	}
	volumes := "may mount only emptyDir, configMap, secret, downwardAPI, persistentVolumeClaim and ephemeral volumes"
	fields := "may not choose its node, runtime or priority"
	cases := []policyCase{
		{name: "emptyDir", change: vol(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})},
		{name: "configMap", change: vol(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}})},
		{name: "downwardAPI", change: vol(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}})},
		{name: "projected configMap and downwardAPI", change: vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{}},
		}}})},
		{name: "ephemeral claim", change: vol(claimTemplate(corev1.PersistentVolumeClaimSpec{}))},
		{name: "seccomp RuntimeDefault", change: pod(&corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}})},
		{name: "64 replicas", change: func(j *tfv1.TFJob) { j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas = ptr.To[int32](64) }},

		{name: "nfs", change: vol(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}}),
			wantField: w + "volumes[0].nfs", wantMsg: volumes},
		{name: "csi", change: vol(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}),
			wantField: w + "volumes[0].csi", wantMsg: volumes},
		{name: "gitRepo", change: vol(corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/r"}}),
			wantField: w + "volumes[0].gitRepo", wantMsg: volumes},
		{name: "iscsi", change: vol(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1", IQN: "iqn.2001-04.com.example:a", Lun: 0}}),
			wantField: w + "volumes[0].iscsi", wantMsg: volumes},
		{name: "cephfs", change: vol(corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"10.0.0.1"}}}),
			wantField: w + "volumes[0].cephfs", wantMsg: volumes},
		{name: "rbd", change: vol(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1"}, RBDImage: "i"}}),
			wantField: w + "volumes[0].rbd", wantMsg: volumes},
		{name: "flexVolume", change: vol(corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "x/y"}}),
			wantField: w + "volumes[0].flexVolume", wantMsg: volumes},
		{name: "glusterfs", change: vol(corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "e", Path: "p"}}),
			wantField: w + "volumes[0].glusterfs", wantMsg: volumes},
		{name: "projected ServiceAccount token", change: vol(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "t"}},
		}}}), wantField: w + "volumes[0].projected.sources[1].serviceAccountToken", wantMsg: volumes},
		{name: "ephemeral claim cloned from another", change: vol(claimTemplate(corev1.PersistentVolumeClaimSpec{
			DataSource: &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "nb-b-home"}})),
			wantField: w + "volumes[0].ephemeral.volumeClaimTemplate.spec.dataSource", wantMsg: "(without a dataSource)"},
		{name: "ephemeral claim from a dataSourceRef", change: vol(claimTemplate(corev1.PersistentVolumeClaimSpec{
			DataSourceRef: &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "nb-b-home"}})),
			wantField: w + "volumes[0].ephemeral.volumeClaimTemplate.spec.dataSourceRef", wantMsg: volumes},
		{name: "imagePullSecrets", change: func(j *tfv1.TFJob) {
			worker(j).ImagePullSecrets = []corev1.LocalObjectReference{{Name: "nb-s3"}, {Name: "registry-admin"}}
		}, wantField: w + "imagePullSecrets[1].name", wantMsg: "Secret registry-admin: a TFJob from system:serviceaccount:" + ns + ":nb may reference only"},
		{name: "priorityClassName", change: func(j *tfv1.TFJob) { worker(j).PriorityClassName = "system-node-critical" },
			wantField: w + "priorityClassName", wantMsg: fields},
		{name: "schedulingPolicy.priorityClass", change: func(j *tfv1.TFJob) {
			j.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{PriorityClass: "high"}
		}, wantField: "spec.runPolicy.schedulingPolicy.priorityClass", wantMsg: fields},
		{name: "runtimeClassName", change: func(j *tfv1.TFJob) { worker(j).RuntimeClassName = ptr.To("unsandboxed") },
			wantField: w + "runtimeClassName", wantMsg: fields},
		{name: "nodeName", change: func(j *tfv1.TFJob) { worker(j).NodeName = "control-plane" },
			wantField: w + "nodeName", wantMsg: fields},
		{name: "tolerations", change: func(j *tfv1.TFJob) {
			worker(j).Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, wantField: w + "tolerations[0]", wantMsg: "may have only the tolerations the admin allows"},
		{name: "shareProcessNamespace", change: func(j *tfv1.TFJob) { worker(j).ShareProcessNamespace = ptr.To(true) },
			wantField: w + "shareProcessNamespace", wantMsg: fields},
		{name: "pod seccomp Unconfined", change: pod(&corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}),
			wantField: w + "securityContext.seccompProfile", wantMsg: "or run unconfined"},
		{name: "container seccomp Unconfined", change: container(&corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}),
			wantField: w + "containers[0].securityContext.seccompProfile", wantMsg: fields},
		{name: "pod AppArmor Unconfined", change: pod(&corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}),
			wantField: w + "securityContext.appArmorProfile", wantMsg: fields},
		{name: "container AppArmor Unconfined", change: container(&corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}}),
			wantField: w + "containers[0].securityContext.appArmorProfile", wantMsg: fields},
		{name: "AppArmor annotation unconfined", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Annotations = map[string]string{
				"container.apparmor.security.beta.kubernetes.io/tensorflow": "unconfined"}
		}, wantField: "spec.tfReplicaSpecs.Worker.template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/tensorflow]", wantMsg: fields},
		{name: "procMount Unmasked", change: container(&corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}),
			wantField: w + "containers[0].securityContext.procMount", wantMsg: fields},
		{name: "65 replicas", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas = ptr.To[int32](60)
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS] = j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].DeepCopy()
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Replicas = ptr.To[int32](5)
		}, wantField: "spec.tfReplicaSpecs", wantMsg: "65 replicas in all: a TFJob from system:serviceaccount:" + ns + ":nb may have at most 64 (policy.maxReplicas)"},
		{name: "no creator", change: func(j *tfv1.TFJob) { j.Annotations = nil },
			wantField: "metadata.annotations[tfk8s.io/creator]", wantMsg: "names its creator, that account"},
		{name: "another creator", change: func(j *tfv1.TFJob) { j.Annotations[tfv1.AnnotationCreator] = "system:serviceaccount:" + ns + ":nb-b" },
			wantField: "metadata.annotations[tfk8s.io/creator]", wantMsg: "names its creator"},
	}
	checkNotebookCases(t, nb, plain, ns, cases)
}
