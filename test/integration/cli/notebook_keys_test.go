package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

// notebookS3 is the S3 configuration a notebook's shell has: its S3 Secret's
// environment keys, as its Deployment passes them.
func notebookS3(t *testing.T, f *fixture, name string) (storage.Config, map[string]string) {
	t.Helper()
	data := secretData(t, f.ns, name+"-s3")
	env := map[string]string{}
	for k, v := range data {
		if strings.HasPrefix(k, "TFK8S_") || strings.HasPrefix(k, "AWS_") {
			env[k] = v
		}
	}
	cfg, err := storage.LoadConfig(storage.Config{}, func(k string) string { return env[k] }, "")
	if err != nil {
		t.Fatalf("the S3 settings of notebook %s: %v", name, err)
	}
	return cfg, env
}

// TestNotebookKeys: on a server with accounts, notebooks nb-a and nb-b each get a key
// of their own, confined to notebooks/<namespace>/<name>/. Each writes, reads and lists
// its prefix and is refused the other's and the bucket's root; a job submitted with
// nb-a's settings stores its code and data and names its destination under nb-a's
// prefix; stop deletes the account, and a start while jobs still read the Secret keeps
// its key.
func TestNotebookKeys(t *testing.T) {
	f := newFixtureOn(t, s3server.StartWithAccounts(t))
	ctx := context.Background()
	for _, nb := range []string{"nb-a", "nb-b"} {
		if r := f.mustSucceed("notebook", "start", nb); strings.Contains(r.stderr, "shares") {
			t.Errorf("start %s on a server with accounts: %s", nb, r)
		}
	}
	root := f.srv.Client(t)
	bucket := f.env["TFK8S_S3_BUCKET"]
	at := func(key string) storage.URI { return storage.URI{Bucket: bucket, Key: key} }
	put := func(c *storage.Client, key string) error {
		return c.PutObject(ctx, at(key), strings.NewReader("x"), 1, storage.UploadOptions{})
	}
	if err := put(root, "runs/"+f.ns+"/shared/run.json"); err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]storage.Config{}
	for _, nb := range []string{"nb-a", "nb-b"} {
		cfg, _ := notebookS3(t, f, nb)
		cfgs[nb] = cfg
		if want := "notebooks/" + f.ns + "/" + nb + "/"; cfg.Prefix != want || cfg.AccessKeyID == f.env["AWS_ACCESS_KEY_ID"] {
			t.Fatalf("notebook %s: prefix %q, key %s; want %q and a key of its own", nb, cfg.Prefix, cfg.AccessKeyID, want)
		}
		c, err := storage.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := put(c, cfg.Prefix+"own.txt"); err != nil {
			t.Errorf("%s's key writing its prefix: %v", nb, err)
		}
		var buf bytes.Buffer
		if _, err := c.Download(ctx, at(cfg.Prefix+"own.txt"), &buf); err != nil || buf.String() != "x" {
			t.Errorf("%s's key reading its prefix: %q, %v", nb, buf.String(), err)
		}
		if objs, err := c.List(ctx, at(cfg.Prefix)); err != nil || len(objs) != 1 {
			t.Errorf("%s's key listing its prefix: %v, %v; want its one object", nb, objs, err)
		}
	}
	a, err := storage.New(cfgs["nb-a"])
	if err != nil {
		t.Fatal(err)
	}
	bPrefix := cfgs["nb-b"].Prefix
	_, readErr := a.Download(ctx, at(bPrefix+"own.txt"), &bytes.Buffer{})
	_, rootErr := a.Download(ctx, at("runs/"+f.ns+"/shared/run.json"), &bytes.Buffer{})
	_, listErr := a.List(ctx, at(bPrefix))
	_, listRootErr := a.List(ctx, at(""))
	for what, err := range map[string]error{
		"reading nb-b's object": readErr, "writing under nb-b's prefix": put(a, bPrefix+"planted.txt"),
		"reading the bucket's root": rootErr, "writing the bucket's root": put(a, "planted.txt"),
		"listing nb-b's prefix": listErr, "listing the bucket": listRootErr,
	} {
		if !storage.Denied(err) {
			t.Errorf("nb-a's key %s: %v; want access denied", what, err)
		}
	}

	checkSubmitUnderPrefix(t, f, "nb-a", cfgs["nb-a"].Prefix)
	checkStopDeletesKey(t, f, cfgs)
	checkFailedStartLeavesNoKey(t, f)
}

// checkFailedStartLeavesNoKey: a start refused before the notebook's Secret is
// written (its ServiceAccount's name is taken) leaves the bucket policy as it was, so
// no account is left that nothing records.
func checkFailedStartLeavesNoKey(t *testing.T, f *fixture) {
	t.Helper()
	ctx := context.Background()
	policy := func() string {
		p, err := f.srv.MinioClient().GetBucketPolicy(ctx, f.env["TFK8S_S3_BUCKET"])
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := policy()
	taken := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "nb-c"}}
	if err := k8sClient.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if r := f.tfk8s("notebook", "start", "nb-c"); r.code == 0 || !strings.Contains(r.stderr, "serviceaccount "+f.ns+"/nb-c exists and is not notebook nb-c's") {
		t.Errorf("start with its ServiceAccount's name taken: %s", r)
	}
	if after := policy(); after != before || !strings.Contains(before, "tfk8s-key-") {
		t.Errorf("bucket policy after a failed start:\n%s\nwant it as before, with nb-a's statements:\n%s", after, before)
	}
}

// checkSubmitUnderPrefix submits a job with notebook nb's settings, as a cell in it
// would, and checks that its code, data and destination are under the prefix.
func checkSubmitUnderPrefix(t *testing.T, f *fixture, nb, prefix string) {
	t.Helper()
	_, env := notebookS3(t, f, nb)
	sub := &fixture{t: t, ns: f.ns, srv: f.srv, env: env}
	sub.env["TFK8S_STORAGE_SECRET"] = nb + "-s3"
	code := writeTree(t, map[string]string{"x.py": "print(1)\n"})
	data := writeTree(t, map[string]string{"train.csv": "1,2\n"})
	sub.mustSucceed("submit", code, "--name", "fromnb", "--data", data, "--image", "tf:2.16", "--", "python3", "x.py")
	job := f.getJob("fromnb")
	base := "s3://" + f.env["TFK8S_S3_BUCKET"] + "/" + prefix
	if job.Spec.Code == nil || !strings.HasPrefix(job.Spec.Code.Source, base+"code/") {
		t.Errorf("code of the job from %s: %+v; want under %scode/", nb, job.Spec.Code, base)
	}
	if len(job.Spec.Data) != 1 || !strings.HasPrefix(job.Spec.Data[0].Source, base+"datasets/") {
		t.Errorf("data of the job from %s: %+v; want under %sdatasets/", nb, job.Spec.Data, base)
	}
	if a := job.Spec.Artifacts; a == nil || !strings.HasPrefix(a.Destination, base+"runs") {
		t.Errorf("artifacts of the job from %s: %+v; want its destination under %sruns", nb, a, base)
	}
	objs, err := f.srv.Client(t).List(context.Background(), storage.URI{Bucket: f.env["TFK8S_S3_BUCKET"], Key: prefix})
	if err != nil || len(objs) < 3 {
		t.Errorf("objects under %s after the submit: %v, %v; want the code archive and the data set", prefix, objs, err)
	}
}

// checkStopDeletesKey: a stop while a job reads nb-a's Secret keeps it, and a start
// then keeps its key; nb-b, read by no job, is stopped with its account.
func checkStopDeletesKey(t *testing.T, f *fixture, cfgs map[string]storage.Config) {
	t.Helper()
	f.mustSucceed("notebook", "stop", "nb-a")
	f.mustSucceed("notebook", "start", "nb-a")
	if again, _ := notebookS3(t, f, "nb-a"); again.AccessKeyID != cfgs["nb-a"].AccessKeyID {
		t.Errorf("nb-a's key after a stop kept its Secret and a start: %s, want %s still", again.AccessKeyID, cfgs["nb-a"].AccessKeyID)
	}
	// Without the bucket's S3 settings the account cannot go, and nothing but the
	// Secret would remember it: the Secret stays, and the user is told.
	bare := &fixture{t: t, ns: f.ns, srv: f.srv, env: map[string]string{}}
	if r := bare.tfk8s("notebook", "stop", "nb-b"); r.code == 0 || !strings.Contains(r.stderr, "secret nb-b-s3 of notebook nb-b kept") {
		t.Errorf("stop without S3 settings: %s", r)
	}
	if got, _ := notebookS3(t, f, "nb-b"); got.AccessKeyID != cfgs["nb-b"].AccessKeyID {
		t.Errorf("nb-b's Secret after a stop without S3 settings holds key %s, want %s", got.AccessKeyID, cfgs["nb-b"].AccessKeyID)
	}
	f.mustSucceed("notebook", "stop", "nb-b")
	b, err := storage.New(cfgs["nb-b"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(context.Background(), storage.URI{Bucket: f.env["TFK8S_S3_BUCKET"], Key: cfgs["nb-b"].Prefix}); err == nil {
		t.Error("nb-b's key lists its prefix after nb-b was stopped: want its account gone")
	}
}
