package notebook

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
)

func TestNotebookStartFlagsRefused(t *testing.T) {
	ok := Settings{Image: images.Jupyter, Size: "10Gi"}
	cases := []struct {
		name     string
		notebook string
		change   func(*Settings)
		want     string
	}{
		{"size not a quantity", "nb", func(f *Settings) { f.Size = "ten" }, `--size "ten": not a quantity`},
		{"size zero", "nb", func(f *Settings) { f.Size = "0" }, `--size "0": must be positive`},
		{"size empty", "nb", func(f *Settings) { f.Size = "" }, `--size: must not be empty`},
		{"cpu", "nb", func(f *Settings) { f.CPU = "lots" }, `--cpu "lots": not a quantity`},
		{"memory", "nb", func(f *Settings) { f.Memory = "-1Gi" }, `--memory "-1Gi": must be positive`},
		{"storage class", "nb", func(f *Settings) { f.StorageClass = "Fast_SSD" }, `--storage-class "Fast_SSD":`},
		{"image", "nb", func(f *Settings) { f.Image = "" }, `--image: must not be empty`},
		{"name", "My.Notebook", func(*Settings) {}, `notebook name "My.Notebook":`},
		{"name too long", strings.Repeat("n", 60), func(*Settings) {}, `at most 58 characters`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			tc.change(&f)
			_, err := f.Spec("ns", tc.notebook)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := ok.Spec("ns", "notebook"); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}

// testNotebookSpec is a notebook with every setting.
func testNotebookSpec() Spec {
	cpu, mem := resource.MustParse("2"), resource.MustParse("4Gi")
	return Spec{
		namespace: "team", name: "nb", image: images.Jupyter, size: resource.MustParse("10Gi"), storageClass: "fast",
		cpu: &cpu, memory: &mem, Token: "t0ken",
		S3: storage.Config{Endpoint: "10.0.0.1:9000", Bucket: "b", AccessKeyID: "AK", SecretAccessKey: "SK", Region: "r", Insecure: true, Prefix: "notebooks/team/nb/"},
	}
}

func TestNotebookDeployment(t *testing.T) {
	d := constructNotebookDeployment(testNotebookSpec())
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || *d.Spec.Replicas != 1 {
		t.Errorf("strategy %s, replicas %d: want Recreate, 1", d.Spec.Strategy.Type, *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "nb" || *pod.SecurityContext.RunAsUser != 1000 || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("account %q, security %+v: want nb, uid 1000, non-root", pod.ServiceAccountName, pod.SecurityContext)
	}
	c := pod.Containers[0]
	wantCommand := []string{"jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--ServerApp.root_dir=/home/jovyan"}
	if diff := cmp.Diff(wantCommand, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	// Every value comes from a Secret: none is written in the Deployment, but the name
	// of the S3 Secret, which the jobs submitted from the notebook read.
	var got []string
	for _, e := range c.Env {
		if e.Name == "TFK8S_STORAGE_SECRET" && e.Value == "nb-s3" {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s is not a secretKeyRef: %+v", e.Name, e)
			continue
		}
		got = append(got, e.Name+"="+e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
	}
	want := []string{"JUPYTER_TOKEN=nb-token/token", "TFK8S_S3_ENDPOINT=nb-s3/TFK8S_S3_ENDPOINT", "TFK8S_S3_BUCKET=nb-s3/TFK8S_S3_BUCKET",
		"AWS_ACCESS_KEY_ID=nb-s3/AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY=nb-s3/AWS_SECRET_ACCESS_KEY", "AWS_REGION=nb-s3/AWS_REGION",
		"TFK8S_S3_INSECURE=nb-s3/TFK8S_S3_INSECURE", "TFK8S_S3_PREFIX=nb-s3/TFK8S_S3_PREFIX"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if len(c.Env) != len(want)+1 {
		t.Errorf("env %+v: want TFK8S_STORAGE_SECRET=nb-s3 besides the Secrets' values", c.Env)
	}
	if p := c.ReadinessProbe.HTTPGet; p == nil || p.Path != "/api" || p.Port.IntValue() != 8888 {
		t.Errorf("readiness probe %+v: want GET /api on 8888", c.ReadinessProbe)
	}
	wantRes := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	if diff := cmp.Diff(wantRes, c.Resources.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if c.VolumeMounts[0].MountPath != "/home/jovyan" || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "nb-home" {
		t.Errorf("home: mount %+v, volume %+v: want nb-home at /home/jovyan", c.VolumeMounts, pod.Volumes)
	}
}

func TestNotebookSecretsAndClaim(t *testing.T) {
	s := testNotebookSpec()
	token, s3 := constructNotebookSecrets(s)
	gotS3 := map[string]string{}
	for k, v := range s3.Data {
		gotS3[k] = string(v)
	}
	wantS3 := map[string]string{"TFK8S_S3_ENDPOINT": "10.0.0.1:9000", "TFK8S_S3_BUCKET": "b", "AWS_ACCESS_KEY_ID": "AK",
		"AWS_SECRET_ACCESS_KEY": "SK", "AWS_REGION": "r", "TFK8S_S3_INSECURE": "true", "TFK8S_S3_PREFIX": "notebooks/team/nb/",
		"endpoint": "10.0.0.1:9000", "accessKeyID": "AK", "secretAccessKey": "SK", "region": "r", "insecure": "true"}
	if diff := cmp.Diff(wantS3, gotS3); diff != "" {
		t.Errorf("S3 secret (-want +got):\n%s", diff)
	}
	if string(token.Data["token"]) != "t0ken" || token.Name != "nb-token" {
		t.Errorf("token secret %s %q", token.Name, token.Data)
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nb", Namespace: "team", UID: "uid-nb"}}
	pvc := constructNotebookClaim(s, account)
	if pvc.Name != "nb-home" || *pvc.Spec.StorageClassName != "fast" || pvc.Spec.Resources.Requests.Storage().String() != "10Gi" {
		t.Errorf("claim %s class %v size %v: want nb-home, fast, 10Gi", pvc.Name, pvc.Spec.StorageClassName, pvc.Spec.Resources.Requests)
	}
	// The notebook's account owns its home: the notebooks' admission policy lets a job
	// of that account, and of no other notebook's, mount it.
	wantOwners := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: "nb", UID: "uid-nb"}}
	if diff := cmp.Diff(wantOwners, pvc.OwnerReferences); diff != "" {
		t.Errorf("claim's owners (-want +got):\n%s", diff)
	}
	for _, labels := range []map[string]string{token.Labels, s3.Labels, pvc.Labels} {
		if labels["tfk8s.io/notebook"] != "nb" {
			t.Errorf("labels %v: want tfk8s.io/notebook=nb", labels)
		}
	}
}

func TestCheckStorageClass(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "tfk8s-local"}, Provisioner: "p"},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "p"},
	).Build()
	if err := CheckStorageClass(context.Background(), c, "fast"); err != nil {
		t.Errorf("fast: %v", err)
	}
	err := CheckStorageClass(context.Background(), c, "slow")
	want := `--storage-class "slow": no such StorageClass (the cluster has: fast, tfk8s-local)`
	if err == nil || err.Error() != want {
		t.Errorf("slow: %v, want %s", err, want)
	}
}

func TestNotebookTokenRandom(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if len(a) != 64 || a == b {
		t.Errorf("tokens %q and %q: want two different ones of 64 hex digits", a, b)
	}
}
