package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// trainTree is a user's code directory, with things .tfk8signore leaves out.
var trainTree = map[string]string{
	"train.py":             "print('training')\n",
	"lib/__init__.py":      "",
	"lib/model.py":         "LAYERS = 3\n",
	"scratch/big.bin":      "left out by .tfk8signore",
	"old.ckpt":             "left out by .tfk8signore",
	"lib/keep.ckpt.txt":    "kept: does not end in .ckpt",
	".tfk8signore":         "scratch/\n*.ckpt\n",
	".git/HEAD":            "ref: refs/heads/main\n",
	"lib/.tfk8signore":     "model_test.py\n",
	"lib/model_test.py":    "left out by lib/.tfk8signore",
	"data/README.md":       "kept\n",
	"data/cache/file.tmp":  "kept\n",
	"nested/deep/file.txt": "kept\n",
}

// objects lists every object of the test's bucket, as keys.
func (f *fixture) objects() []string {
	f.t.Helper()
	objs, err := f.srv.Client(f.t).List(context.Background(), storage.URI{Bucket: f.srv.Bucket})
	if err != nil {
		f.t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.URI.Key)
	}
	return keys
}

// objectsUnder lists the objects under a prefix of the test's bucket.
func (f *fixture) objectsUnder(prefix string) []storage.Object {
	f.t.Helper()
	objs, err := f.srv.Client(f.t).List(context.Background(), storage.URI{Bucket: f.srv.Bucket, Key: prefix})
	if err != nil {
		f.t.Fatal(err)
	}
	return objs
}

// secrets lists the names of the Secrets the CLI made in the test's namespace.
func (f *fixture) secrets() []string {
	f.t.Helper()
	list := &corev1.SecretList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(f.ns), client.MatchingLabels{"app.kubernetes.io/managed-by": "tfk8s"}); err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// jobs lists the names of the TFJobs in the test's namespace.
func (f *fixture) jobs() []string {
	f.t.Helper()
	list := &tfv1.TFJobList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

// archiveEntries downloads a tar.gz and lists its entries.
func (f *fixture) archiveEntries(u storage.URI) []string {
	f.t.Helper()
	var buf bytes.Buffer
	if _, err := f.srv.Client(f.t).Download(context.Background(), u, &buf); err != nil {
		f.t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		f.t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			f.t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

func TestSubmitUploadsOnceAndCreatesJobAndSecret(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, trainTree)
	data := writeTree(t, map[string]string{"train/part-0.csv": "1,2\n", "test/part-0.csv": "3,4\n"})

	r := f.mustSucceed("submit", code, "--name", "first", "--image", "tf:2.16", "--ps", "1", "--workers", "2",
		"--data", data, "--artifacts", "model", "--env", "EPOCHS=3", "--", "python3", "train.py", "--epochs", "3")
	if !strings.Contains(r.stdout, "tfjob.tfk8s.io/first created") || !strings.Contains(r.stdout, " created\n") {
		t.Errorf("submit did not say what it created:\n%s", r)
	}
	if !strings.Contains(r.stderr, "code uploaded: ") || !strings.Contains(r.stderr, "data uploaded: ") {
		t.Errorf("submit did not report its uploads:\n%s", r)
	}

	// The job: code, data, artifacts, storage and command as asked.
	job := f.getJob("first")
	codeObjs := f.objectsUnder("code/")
	if len(codeObjs) != 1 {
		t.Fatalf("code/ holds %d objects, want 1", len(codeObjs))
	}
	if got, want := job.Spec.Code.Source, codeObjs[0].URI.String(); got != want {
		t.Errorf("spec.code.source = %s, want the uploaded %s", got, want)
	}
	if !strings.HasSuffix(job.Spec.Code.Source, "/sha256-"+job.Spec.Code.SHA256+".tar.gz") {
		t.Errorf("spec.code = %+v: want a content-addressed source with its digest", job.Spec.Code)
	}
	wantSpec := struct {
		Artifacts *tfv1.Artifacts
		Data      []tfv1.DataSource
		Replicas  [2]int32
		Command   []string
		Env       []corev1.EnvVar
	}{
		Artifacts: &tfv1.Artifacts{Destination: "s3://" + f.srv.Bucket + "/runs", Paths: []string{"/workspace/model"}, Interval: job.Spec.Artifacts.Interval},
		Data:      []tfv1.DataSource{{Source: job.Spec.Data[0].Source, Path: "/data"}},
		Replicas:  [2]int32{1, 2},
		Command:   []string{"python3", "train.py", "--epochs", "3"},
		Env:       []corev1.EnvVar{{Name: "EPOCHS", Value: "3"}},
	}
	gotSpec := wantSpec
	gotSpec.Artifacts, gotSpec.Data = job.Spec.Artifacts, job.Spec.Data
	gotSpec.Replicas = [2]int32{*job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Replicas, *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas}
	c := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
	gotSpec.Command, gotSpec.Env = c.Command, c.Env
	if diff := cmp.Diff(wantSpec, gotSpec); diff != "" {
		t.Errorf("submitted spec (-want +got):\n%s", diff)
	}
	if len(f.objectsUnder(strings.TrimPrefix(job.Spec.Data[0].Source, "s3://"+f.srv.Bucket+"/"))) != 2 {
		t.Errorf("the data set's 2 files are not under %s: %v", job.Spec.Data[0].Source, f.objects())
	}

	// The Secret holds the credentials; the job only names it.
	if job.Spec.Storage == nil {
		t.Fatal("spec.storage is not set")
	}
	secret := &corev1.Secret{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: job.Spec.Storage.SecretRef.Name}, secret); err != nil {
		t.Fatalf("reading the storage secret: %v", err)
	}
	wantData := map[string]string{"endpoint": f.srv.Endpoint, "accessKeyID": f.srv.AccessKey, "secretAccessKey": f.srv.SecretKey, "region": "us-east-1", "insecure": "true"}
	gotData := map[string]string{}
	for k, v := range secret.Data {
		gotData[k] = string(v)
	}
	if diff := cmp.Diff(wantData, gotData); diff != "" {
		t.Errorf("secret data (-want +got):\n%s", diff)
	}
	manifest, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(manifest), f.srv.SecretKey) || strings.Contains(string(manifest), f.srv.AccessKey) {
		t.Error("the TFJob holds the S3 credentials")
	}

	// .tfk8signore (and .git) honoured.
	entries := f.archiveEntries(storage.MustParseURI(job.Spec.Code.Source))
	wantEntries := []string{"data/", "data/README.md", "data/cache/", "data/cache/file.tmp", "lib/", "lib/__init__.py", "lib/keep.ckpt.txt", "lib/model.py",
		"nested/", "nested/deep/", "nested/deep/file.txt", "train.py"}
	slices.Sort(entries)
	if diff := cmp.Diff(wantEntries, entries); diff != "" {
		t.Errorf("archive entries (-want +got):\n%s", diff)
	}

	// The same code and data again, as another job: nothing uploaded, a Secret of its own.
	before := f.objectsUnder("")
	r = f.mustSucceed("submit", code, "--name", "second", "--image", "tf:2.16", "--data", data, "--", "python3", "train.py")
	if !strings.Contains(r.stderr, "code unchanged, 0 bytes uploaded") || !strings.Contains(r.stderr, "data unchanged, 0 bytes uploaded") {
		t.Errorf("the second submit did not say nothing was uploaded:\n%s", r)
	}
	if !strings.Contains(r.stdout, "secret/second-storage created") || !strings.Contains(r.stdout, "tfjob.tfk8s.io/second created") {
		t.Errorf("the second submit did not create its own secret:\n%s", r)
	}
	after, recorded := f.withoutRunRecord(f.objectsUnder(""), "second") // its only new object
	if diff := cmp.Diff(before, after); diff != "" || !recorded {
		t.Errorf("the second submit changed the bucket beyond its run record (recorded: %v) (-before +after):\n%s", recorded, diff)
	}
	if second := f.getJob("second"); second.Spec.Code.Source != job.Spec.Code.Source || second.Spec.Storage.SecretRef.Name != "second-storage" {
		t.Errorf("the second job does not share the code, or has no secret of its own: %+v %+v", second.Spec.Code, second.Spec.Storage)
	}
	if diff := cmp.Diff([]string{"first-storage", "second-storage"}, f.secrets()); diff != "" {
		t.Errorf("secrets, one per job (-want +got):\n%s", diff)
	}
}

func TestSubmitDryRunCreatesNothing(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, trainTree)
	data := writeTree(t, map[string]string{"part-0.csv": "1,2\n"})
	for _, args := range [][]string{
		{"submit", code, "--name", "dry", "--image", "tf:2.16", "--workers", "3", "--data", data, "--dry-run", "-o", "yaml", "--", "python3", "train.py"},
		{"submit", code, "--name", "dry", "--image", "tf:2.16", "--workers", "3", "--data", data, "--dry-run", "-o", "json", "--", "python3", "train.py"},
		{"render", code, "--name", "dry", "--image", "tf:2.16", "--workers", "3", "--data", data, "--", "python3", "train.py"},
	} {
		r := f.mustSucceed(args...)
		job := &tfv1.TFJob{}
		if err := yaml.UnmarshalStrict([]byte(r.stdout), job); err != nil {
			t.Fatalf("%v: the output is no TFJob: %v\n%s", args, err, r)
		}
		if job.APIVersion != "tfk8s.io/v1alpha1" || job.Kind != "TFJob" || job.Name != "dry" || job.Namespace != f.ns {
			t.Errorf("%v: rendered %s %s %s/%s", args, job.APIVersion, job.Kind, job.Namespace, job.Name)
		}
		if job.Spec.Code == nil || !strings.HasPrefix(job.Spec.Code.Source, "s3://"+f.srv.Bucket+"/code/sha256-") ||
			job.Spec.Storage == nil || len(job.Spec.Data) != 1 || *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas != 3 {
			t.Errorf("%v: the rendered job is incomplete:\n%s", args, r.stdout)
		}
	}
	if got := f.objects(); len(got) != 0 {
		t.Errorf("dry runs uploaded %v", got)
	}
	if got := f.jobs(); len(got) != 0 {
		t.Errorf("dry runs created tfjobs %v", got)
	}
	if got := f.secrets(); len(got) != 0 {
		t.Errorf("dry runs created secrets %v", got)
	}
}

func TestSubmitKubeflowManifest(t *testing.T) {
	f := newFixture(t)
	manifest, err := os.ReadFile("../api/testdata/kubeflow-dist-mnist.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "tfjob.yaml")
	lower := strings.Replace(strings.Replace(string(manifest), "    PS:", "    ps:", 1), "    Worker:", "    worker:", 1)
	lower = strings.Replace(lower, "    cleanPodPolicy: None", "    cleanPodPolicy: None\n    managedBy: kubeflow.org/training-operator", 1)
	if err := os.WriteFile(file, []byte(lower), 0o644); err != nil {
		t.Fatal(err)
	}

	// As it is.
	f.mustSucceed("submit", "-f", file)
	job := f.getJob("dist-mnist-for-e2e-test")
	if *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypePS].Replicas != 2 || *job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas != 4 ||
		*job.Spec.RunPolicy.CleanPodPolicy != tfv1.CleanPodPolicyNone || job.Spec.RunPolicy.ManagedBy != nil {
		t.Errorf("converted spec: %+v", job.Spec)
	}
	// tfk8s runs it: the controller creates its pods.
	f.waitPods(job.Name, "dist-mnist-for-e2e-test-ps-0", "dist-mnist-for-e2e-test-ps-1",
		"dist-mnist-for-e2e-test-worker-0", "dist-mnist-for-e2e-test-worker-1", "dist-mnist-for-e2e-test-worker-2", "dist-mnist-for-e2e-test-worker-3")

	// With flags over it, and code shipped.
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "-f", file, "--name", "overridden", "--workers", "2", "--image", "tf:2.16", "--", "python3", "train.py")
	job = f.getJob("overridden")
	worker := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker]
	if *worker.Replicas != 2 || worker.Template.Spec.Containers[0].Image != "tf:2.16" || job.Spec.Code == nil || job.Spec.Storage == nil {
		t.Errorf("overridden spec: %s", mustYAML(t, job.Spec))
	}

	// The conversion keeps the pod templates' metadata. (The API server then prunes it:
	// the CRD's template.metadata has no properties; see the report of this change.)
	r := f.mustSucceed("render", "-f", file)
	if !strings.Contains(r.stdout, "sidecar.istio.io/inject: \"false\"") {
		t.Errorf("the rendered job lost the template annotations:\n%s", r.stdout)
	}

	// A field tfk8s cannot honour: refused, named, nothing created.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(lower, "  runPolicy:", "  elasticPolicy:\n    maxReplicas: 8\n  runPolicy:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = f.tfk8s("submit", "-f", bad, "--name", "bad")
	if r.code == 0 || !strings.Contains(r.stderr, `unknown field "spec.elasticPolicy"`) {
		t.Errorf("a manifest with spec.elasticPolicy: %s", r)
	}
	if slices.Contains(f.jobs(), "bad") {
		t.Error("the refused manifest was created")
	}
}

func TestSubmitErrorsLeaveNothing(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	file := filepath.Join(code, "train.py")
	closed := closedPort(t)
	f.mustSucceed("submit", "--name", "taken", "--image", "tf", "--", "python3", "x.py") // its Secret and run record
	takenObjects, takenSecrets := f.objects(), f.secrets()
	partial := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "partial"}, Data: map[string][]byte{"endpoint": []byte("s3:9000")}}
	if err := k8sClient.Create(context.Background(), partial); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  map[string]string // replaces the environment's S3 settings when set
		args []string
		want string
	}{
		{"missing DIR", nil, []string{"submit", "/nonexistent/code", "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "DIR /nonexistent/code: stat /nonexistent/code: no such file or directory"},
		{"DIR is a file", nil, []string{"submit", file, "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "DIR " + file + ": not a directory"},
		{"missing --data DIR", nil, []string{"submit", code, "--data", "/nonexistent/data", "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "--data /nonexistent/data: stat"},
		{"S3 unreachable", map[string]string{tfjob.EnvS3Endpoint: "http://" + closed}, []string{"submit", code, "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "S3 endpoint http://" + closed + " unreachable"},
		{"bucket missing", nil, []string{"submit", code, "--s3-bucket", "no-such-bucket", "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "bucket no-such-bucket does not exist at endpoint"},
		{"S3 refuses the key", map[string]string{tfjob.EnvAccessKeyID: "tfk8s-no-such-key"}, []string{"submit", code, "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "refused access key tfk8s-no-such-key (from $AWS_ACCESS_KEY_ID) for bucket"},
		{"no S3 configured", map[string]string{}, []string{"submit", code, "--name", "a", "--image", "tf", "--", "python3", "t.py"}, "no S3 endpoint configured: set --s3-endpoint, TFK8S_S3_ENDPOINT"},
		{"negative workers", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--workers", "-1", "--", "python3", "t.py"}, "--workers -1: must not be negative"},
		{"negative ps", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--ps", "-3", "--", "python3", "t.py"}, "--ps -3: must not be negative"},
		{"bad cpu", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--cpu", "abc", "--", "python3", "t.py"}, `--cpu "abc": not a quantity`},
		{"bad memory", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--memory", "4 GB", "--", "python3", "t.py"}, `--memory "4 GB": not a quantity`},
		{"no workers, no chief", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--workers", "0", "--", "python3", "t.py"}, "--workers 0 needs --chief"},
		{"no image", nil, []string{"submit", code, "--name", "a", "--", "python3", "t.py"}, "--image is required"},
		{"no command", nil, []string{"submit", code, "--name", "a", "--image", "tf"}, "a command is required after --"},
		{"name taken", nil, []string{"submit", code, "--name", "taken", "--image", "tf", "--", "python3", "t.py"}, `tfjobs.tfk8s.io "taken" already exists`},
		{"--storage-secret missing", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--storage-secret", "no-such", "--", "python3", "t.py"}, "--storage-secret no-such: no such Secret in namespace " + f.ns},
		{"--storage-secret lacking keys", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--storage-secret", "partial", "--", "python3", "t.py"}, "--storage-secret partial: the Secret has no accessKeyID, secretAccessKey, which the job's pods read"},
		{"--storage-secret for no storage", map[string]string{}, []string{"submit", "--name", "a", "--image", "tf", "--storage-secret", "partial", "--", "python3", "t.py"}, "--storage-secret partial: the job keeps nothing in S3"},
		{"--storage-secret and --s3-cluster-endpoint", nil, []string{"submit", code, "--name", "a", "--image", "tf", "--storage-secret", "partial", "--s3-cluster-endpoint", "s3:9000", "--", "python3", "t.py"}, "--s3-cluster-endpoint s3:9000: the job's pods reach S3 at the endpoint in the Secret partial (--storage-secret)"},
		{"TFK8S_STORAGE_SECRET not a name", map[string]string{"TFK8S_STORAGE_SECRET": "Not_A_Name"}, []string{"submit", code, "--name", "a", "--image", "tf", "--", "python3", "t.py"}, `TFK8S_STORAGE_SECRET "Not_A_Name": not a Secret's name`},
		{"name too long for its pods", nil, []string{"submit", code, "--name", strings.Repeat("n", 55), "--image", "tf", "--", "python3", "t.py"}, "metadata.name is too long"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			saved := f.env
			if tc.env != nil {
				f.env = map[string]string{}
				for k, v := range saved {
					if !strings.HasPrefix(k, "TFK8S_S3_") && !strings.HasPrefix(k, "AWS_") {
						f.env[k] = v
					}
				}
				if len(tc.env) > 0 {
					for k, v := range saved {
						f.env[k] = v
					}
					for k, v := range tc.env {
						f.env[k] = v
					}
				}
			}
			defer func() { f.env = saved }()
			r := f.tfk8s(tc.args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want a non-zero exit and an error containing %q, got %s", tc.want, r)
			}
			if got := f.jobs(); !slices.Equal(got, []string{"taken"}) {
				t.Errorf("tfjobs after the error: %v", got)
			}
			if got := f.objects(); !slices.Equal(got, takenObjects) {
				t.Errorf("objects uploaded: %v", got)
			}
			if got := f.secrets(); !slices.Equal(got, takenSecrets) {
				t.Errorf("secrets created: %v", got)
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// mustYAML renders v for a failure message.
func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSubmitFailedUploadCreatesNoJob: the bucket answers, but the archive cannot be
// stored (an object "code" stands where the prefix code/ must be, which the POSIX
// backend cannot turn into a directory): no TFJob and no Secret are created.
func TestSubmitFailedUploadCreatesNoJob(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.srv.Client(t).PutObject(ctx, storage.URI{Bucket: f.srv.Bucket, Key: "code"}, strings.NewReader("x"), 1, storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	r := f.tfk8s("submit", code, "--name", "unshipped", "--image", "tf", "--", "python3", "train.py")
	if r.code == 0 || !strings.Contains(r.stderr, "error: uploading code: ") {
		t.Errorf("submit with an upload that fails: %s", r)
	}
	if got := f.jobs(); len(got) != 0 {
		t.Errorf("tfjobs created although the code is not stored: %v", got)
	}
	if got := f.secrets(); len(got) != 0 {
		t.Errorf("secrets created although the code is not stored: %v", got)
	}
	if got := f.objects(); !slices.Equal(got, []string{"code"}) {
		t.Errorf("objects: %v", got)
	}
}

// TestSubmitRemembersStoredTrees re-submits trees already stored: the digest cache
// names them without reading them, and never hides a change, nor an archive gone from
// the bucket.
func TestSubmitRemembersStoredTrees(t *testing.T) {
	f := newFixture(t)
	f.digestCache = filepath.Join(t.TempDir(), "digests.json")
	code := writeTree(t, map[string]string{"train.py": "print('v1')\n", "lib/model.py": "LAYERS = 3\n"})
	data := writeTree(t, map[string]string{"part-0.csv": "1,2\n"})
	// Edited an hour ago: a tree modified a moment ago is never cached.
	hourAgo := time.Now().Add(-time.Hour)
	for _, p := range []string{filepath.Join(code, "train.py"), filepath.Join(code, "lib/model.py"), filepath.Join(data, "part-0.csv")} {
		if err := os.Chtimes(p, hourAgo, hourAgo); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(name string) (result, *tfv1.TFJob) {
		r := f.mustSucceed("submit", code, "--name", name, "--image", "tf:2.16", "--data", data, "--", "python3", "train.py")
		return r, f.getJob(name)
	}

	r, first := submit("first")
	if !strings.Contains(r.stderr, "code uploaded: ") || !strings.Contains(r.stderr, "data uploaded: ") {
		t.Fatalf("the first submit did not upload:\n%s", r)
	}
	cached, err := os.ReadFile(f.digestCache)
	if err != nil || !strings.Contains(string(cached), first.Spec.Code.SHA256) {
		t.Fatalf("the digest cache does not hold the code's digest %s: %q, %v", first.Spec.Code.SHA256, cached, err)
	}
	r, second := submit("second")
	if !strings.Contains(r.stderr, "code unchanged, 0 bytes uploaded") || !strings.Contains(r.stderr, "data unchanged, 0 bytes uploaded") {
		t.Errorf("the second submit uploaded:\n%s", r)
	}
	if second.Spec.Code.Source != first.Spec.Code.Source || second.Spec.Data[0].Source != first.Spec.Data[0].Source {
		t.Errorf("the second job does not name the stored trees: %v %v", second.Spec.Code, second.Spec.Data)
	}

	// The archive deleted from the bucket: the cache knows its digest, and it is packed
	// and uploaded again under the same key.
	src := storage.MustParseURI(first.Spec.Code.Source)
	if err := f.srv.MinioClient().RemoveObject(context.Background(), src.Bucket, src.Key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	r, third := submit("third")
	if !strings.Contains(r.stderr, "code uploaded: ") || third.Spec.Code.Source != first.Spec.Code.Source {
		t.Errorf("the deleted archive was not uploaded again under %s:\n%s", first.Spec.Code.Source, r)
	}

	// Rewritten with the same size, its old time restored: a new archive all the same.
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte("print('v2')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(code, "train.py"), hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	r, fourth := submit("fourth")
	if !strings.Contains(r.stderr, "code uploaded: ") || fourth.Spec.Code.Source == first.Spec.Code.Source {
		t.Errorf("a changed file did not give a new archive (%s):\n%s", fourth.Spec.Code.Source, r)
	}
}
