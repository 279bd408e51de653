package notebook

import (
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The Jupyter image's user and home (hack/tensorflow-image): the home claim is mounted
// there, and the pod runs as that user.
const (
	notebookUID  int64 = 1000
	notebookGID  int64 = 100
	notebookHome       = "/home/jovyan"
)

// Keys of a notebook's token Secret, and the environment variable JupyterLab reads its
// token from (so that the token is in no process's command line).
const (
	notebookTokenKey = "token"
	envJupyterToken  = "JUPYTER_TOKEN"
)

// Spec is what tfk8s notebook start makes a notebook of.
type Spec struct {
	namespace, name string
	image           string
	size            resource.Quantity
	storageClass    string
	cpu, memory     *resource.Quantity
	// S3 is the storage the CLI in the notebook uses, its endpoint as pods reach it.
	S3 storage.Config
	// Token is JupyterLab's token.
	Token string
}

// Names of a notebook's objects. The Deployment, Service, ServiceAccount, Role and
// RoleBinding are named as the notebook; none of the suffixes is "-storage", which a
// job's storage Secret has, so that no job's Secret takes a notebook's name.
func HomeClaim(name string) string   { return name + "-home" }
func tokenSecret(name string) string { return name + "-token" }
func S3Secret(name string) string    { return name + "-s3" }

// notebookLabels are on every object of a notebook, and select its pod.
func notebookLabels(name string) map[string]string {
	return map[string]string{tfv1.LabelNotebook: name, jobs.LabelManagedBy: jobs.ManagedBy}
}

// notebookMeta is the metadata of one of a notebook's objects.
func notebookMeta(s Spec, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: notebookLabels(s.name)}
}

// notebookRules are what the tfk8s CLI in a notebook needs in its namespace for submit,
// list, get, describe, logs, wait, suspend, resume and delete, and nothing more:
// TFJobs; the pods and their logs; the events describe shows. No Secret: the CLI reads
// the S3 settings from its environment, and the jobs it submits read them from the
// notebook's S3 Secret ($TFK8S_STORAGE_SECRET), so that code in a notebook can read
// none of the namespace's Secrets.
func notebookRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{tfv1.GroupVersion.Group}, Resources: []string{"tfjobs"}, Verbs: []string{"create", "get", "list", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"list"}},
	}
}

// constructNotebookAccount builds the ServiceAccount the notebook's pod runs as, its
// Role and the RoleBinding between them: the namespace's only, nothing cluster-scoped.
func constructNotebookAccount(s Spec) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	sa := &corev1.ServiceAccount{ObjectMeta: notebookMeta(s, s.name)}
	role := &rbacv1.Role{ObjectMeta: notebookMeta(s, s.name), Rules: notebookRules()}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: notebookMeta(s, s.name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s.name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: s.name, Namespace: s.namespace}},
	}
	return sa, role, binding
}

// constructNotebookClaim builds the claim of the notebook's home directory, owned by
// the notebook's ServiceAccount account: the notebooks' admission policy lets a job
// mount a claim its requester owns, and no other notebook's.
func constructNotebookClaim(s Spec, account *corev1.ServiceAccount) *corev1.PersistentVolumeClaim {
	meta := notebookMeta(s, HomeClaim(s.name))
	meta.OwnerReferences = []metav1.OwnerReference{accountOwner(account)}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: s.size}},
		},
	}
	if s.storageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(s.storageClass)
	}
	return pvc
}

// accountOwner is the owner reference to the notebook's ServiceAccount. It does not
// block the account's deletion: tfk8s notebook stop takes it off a home it keeps.
func accountOwner(account *corev1.ServiceAccount) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: account.Name, UID: account.UID}
}

// constructNotebookSecrets builds the Secret of JupyterLab's token and the Secret of
// the S3 settings, keyed by the environment variables the CLI reads them from, and
// again by the keys of a job's storage Secret, since the jobs submitted from the
// notebook read it.
func constructNotebookSecrets(s Spec) (token, s3 *corev1.Secret) {
	token = &corev1.Secret{
		ObjectMeta: notebookMeta(s, tokenSecret(s.name)),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{notebookTokenKey: []byte(s.Token)},
	}
	data := jobs.SecretData(s.S3.Endpoint, s.S3.Insecure, s.S3)
	maps.Copy(data, map[string][]byte{
		tfjob.EnvS3Endpoint:      []byte(s.S3.Endpoint),
		tfjob.EnvS3Bucket:        []byte(s.S3.Bucket),
		tfjob.EnvAccessKeyID:     []byte(s.S3.AccessKeyID),
		tfjob.EnvSecretAccessKey: []byte(s.S3.SecretAccessKey),
		tfjob.EnvRegion:          []byte(s.S3.Region),
		tfjob.EnvS3Insecure:      []byte(strconv.FormatBool(s.S3.Insecure)),
		tfjob.EnvS3Prefix:        []byte(s.S3.Prefix),
	})
	s3 = &corev1.Secret{ObjectMeta: notebookMeta(s, S3Secret(s.name)), Type: corev1.SecretTypeOpaque, Data: data}
	return token, s3
}

// notebookEnv is the environment of JupyterLab: its token and the S3 settings, each
// by reference to its Secret, so that no value shows in the Deployment, and the name
// of the S3 Secret, which the jobs submitted from the notebook read.
func notebookEnv(s Spec) []corev1.EnvVar {
	ref := func(env, secret, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
		}}}
	}
	env := []corev1.EnvVar{ref(envJupyterToken, tokenSecret(s.name), notebookTokenKey)}
	for _, k := range []string{tfjob.EnvS3Endpoint, tfjob.EnvS3Bucket, tfjob.EnvAccessKeyID, tfjob.EnvSecretAccessKey, tfjob.EnvRegion, tfjob.EnvS3Insecure, tfjob.EnvS3Prefix} {
		env = append(env, ref(k, S3Secret(s.name), k))
	}
	return append(env, corev1.EnvVar{Name: jobs.EnvStorageSecret, Value: S3Secret(s.name)})
}

// constructNotebookDeployment builds JupyterLab's Deployment: one pod at a time
// (Recreate: the home claim is ReadWriteOnce), as the notebook's ServiceAccount and
// the image's user, the home claim at the image's home, ready once /api answers.
func constructNotebookDeployment(s Spec) *appsv1.Deployment {
	labels := notebookLabels(s.name)
	container := corev1.Container{
		Name:  "jupyter",
		Image: s.image,
		Command: []string{"jupyter", "lab", "--ip=0.0.0.0", "--port=" + strconv.Itoa(int(tfjob.NotebookPort)), "--no-browser",
			"--ServerApp.root_dir=" + notebookHome},
		WorkingDir:   notebookHome,
		Env:          notebookEnv(s),
		Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: tfjob.NotebookPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: "home", MountPath: notebookHome}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api", Port: intstr.FromInt32(tfjob.NotebookPort)}},
			PeriodSeconds: 2, FailureThreshold: 3,
		},
		// The image holds the tfk8s CLI, re-pushed under the same tag by each build (and
		// each patch release): a notebook (re)started resolves the tag again, which
		// costs one registry request and only the layers that changed.
		ImagePullPolicy: corev1.PullAlways,
		Resources:       notebookResources(s),
	}
	return &appsv1.Deployment{
		ObjectMeta: notebookMeta(s, s.name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{tfv1.LabelNotebook: s.name}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: s.name,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsUser: ptr.To(notebookUID), RunAsGroup: ptr.To(notebookGID), FSGroup: ptr.To(notebookGID),
						RunAsNonRoot: ptr.To(true),
					},
					Containers: []corev1.Container{container},
					Volumes: []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: HomeClaim(s.name)},
					}}},
				},
			},
		},
	}
}

// notebookResources requests (and limits the pod to) --cpu and --memory, when given.
func notebookResources(s Spec) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	if s.cpu != nil {
		list[corev1.ResourceCPU] = *s.cpu
	}
	if s.memory != nil {
		list[corev1.ResourceMemory] = *s.memory
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}
}

// constructNotebookService builds the Service in front of JupyterLab.
func constructNotebookService(s Spec) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: notebookMeta(s, s.name),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{tfv1.LabelNotebook: s.name},
			Ports: []corev1.ServicePort{{Name: "http", Port: tfjob.NotebookPort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString("http")}},
		},
	}
}
