package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// notebookObjects are the objects tfk8s notebook start makes for the notebook nb,
// all but the home claim.
func notebookObjects(ns string) []client.Object {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: meta("nb")}, &corev1.Service{ObjectMeta: meta("nb")},
		&corev1.ServiceAccount{ObjectMeta: meta("nb")}, &rbacv1.Role{ObjectMeta: meta("nb")}, &rbacv1.RoleBinding{ObjectMeta: meta("nb")},
		&corev1.Secret{ObjectMeta: meta("nb-token")}, &corev1.Secret{ObjectMeta: meta("nb-s3")},
	}
}

// TestNotebookStartStop: start makes every object, labelled, with the S3 settings in a
// Secret and the endpoint pods reach; a second start changes nothing and says how the
// notebook is; stop deletes all but the home claim, which a new start uses again.
func TestNotebookStartStop(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-class"}, Provisioner: "tfk8s.io/test"}
	if err := k8sClient.Create(ctx, sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), sc) })

	r := f.mustSucceed("notebook", "start", "nb", "--size", "2Gi", "--storage-class", sc.Name, "--cpu", "1",
		"--s3-cluster-endpoint", "http://10.1.2.3:9000")
	if !strings.Contains(r.stdout, "notebook "+f.ns+"/nb started") {
		t.Errorf("start said: %s", r)
	}
	// This server makes no accounts: the notebook has the bucket's keys, and is told.
	if !strings.Contains(r.stderr, "makes no per-notebook keys: the notebook shares all of bucket "+f.env["TFK8S_S3_BUCKET"]+"'s data") {
		t.Errorf("start on a server without accounts said: %s", r)
	}
	for _, obj := range append(notebookObjects(f.ns), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "nb-home"}}) {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("reading %T %s: %v", obj, obj.GetName(), err)
		}
		if obj.GetLabels()["tfk8s.io/notebook"] != "nb" {
			t.Errorf("%T %s labels %v: want tfk8s.io/notebook=nb", obj, obj.GetName(), obj.GetLabels())
		}
	}
	s3 := secretData(t, f.ns, "nb-s3")
	want := map[string]string{"TFK8S_S3_ENDPOINT": "10.1.2.3:9000", "TFK8S_S3_INSECURE": "true", "TFK8S_S3_BUCKET": f.env["TFK8S_S3_BUCKET"],
		"AWS_ACCESS_KEY_ID": f.env["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": f.env["AWS_SECRET_ACCESS_KEY"], "AWS_REGION": s3["AWS_REGION"],
		"TFK8S_S3_PREFIX": "",
		// As a job's storage Secret has them, for the jobs submitted from the notebook.
		"endpoint": "10.1.2.3:9000", "insecure": "true", "accessKeyID": f.env["AWS_ACCESS_KEY_ID"],
		"secretAccessKey": f.env["AWS_SECRET_ACCESS_KEY"], "region": s3["AWS_REGION"]}
	if diff := cmp.Diff(want, s3); diff != "" {
		t.Errorf("S3 secret (-want +got):\n%s", diff)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "nb-home"}, claim); err != nil {
		t.Fatal(err)
	}
	if *claim.Spec.StorageClassName != sc.Name || claim.Spec.Resources.Requests.Storage().String() != "2Gi" {
		t.Errorf("claim class %s size %s: want %s, 2Gi", *claim.Spec.StorageClassName, claim.Spec.Resources.Requests.Storage(), sc.Name)
	}
	checkHomeOwner(t, f.ns, "nb")
	token := secretData(t, f.ns, "nb-token")["token"]

	// Again: nothing changes, the state is told (no node runs the pod here).
	r = f.mustSucceed("notebook", "start", "nb")
	if !regexp.MustCompile(`already running: Starting \(.+\)`).MatchString(r.stdout) || secretData(t, f.ns, "nb-token")["token"] != token {
		t.Errorf("second start: %s (token changed: %v)", r, secretData(t, f.ns, "nb-token")["token"] != token)
	}
	r = f.mustSucceed("notebook", "list")
	if !regexp.MustCompile(`(?m)^nb\s+Starting \(.+\)\s+\S+\s+http://nb\.` + f.ns + `\.svc:8888/lab$`).MatchString(r.stdout) {
		t.Errorf("list: %s", r)
	}

	r = f.mustSucceed("notebook", "stop", "nb")
	if !strings.Contains(r.stdout, "its home claim nb-home is kept") {
		t.Errorf("stop said: %s", r)
	}
	for _, obj := range notebookObjects(f.ns) {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) && obj.GetDeletionTimestamp() == nil {
			t.Errorf("%T %s after stop: %v", obj, obj.GetName(), err)
		}
	}
	r = f.mustSucceed("notebook", "list")
	if !regexp.MustCompile(`(?m)^nb\s+Stopped\s+\S+\s+<none>$`).MatchString(r.stdout) {
		t.Errorf("list after stop: %s", r)
	}
	if r := f.tfk8s("notebook", "open", "nb"); r.code == 0 || !strings.Contains(r.stderr, "notebook "+f.ns+"/nb is stopped: tfk8s notebook start nb") {
		t.Errorf("opening a stopped notebook: %s", r)
	}
	// The home stop keeps has no owner left: the account went, and with an owner
	// reference to it the garbage collector would delete the claim.
	kept := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), kept); err != nil || len(kept.OwnerReferences) != 0 {
		t.Errorf("home claim after stop: %v, owners %+v; want none", err, kept.OwnerReferences)
	}
	f.mustSucceed("notebook", "start", "nb")
	again := &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), again); err != nil || again.UID != claim.UID {
		t.Errorf("home claim after a new start: %v (same: %v)", err, err == nil && again.UID == claim.UID)
	}
	checkHomeOwner(t, f.ns, "nb")
	f.mustSucceed("notebook", "stop", "nb", "--delete-home")
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(claim), again); !apierrors.IsNotFound(err) && again.DeletionTimestamp == nil {
		t.Errorf("home claim after stop --delete-home: %v", err)
	}
	for _, cmd := range []string{"stop", "open"} {
		if r := f.tfk8s("notebook", cmd, "nb"); r.code == 0 || !strings.Contains(r.stderr, "notebook "+f.ns+"/nb: no such notebook") {
			t.Errorf("notebook %s of a notebook that is gone: %s", cmd, r)
		}
	}
}

// checkHomeOwner checks that notebook name's home claim is owned by its ServiceAccount,
// the one there now: the notebooks' admission policy lets that account's jobs, and no
// other notebook's, mount the claim.
func checkHomeOwner(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	sa, home := &corev1.ServiceAccount{}, &corev1.PersistentVolumeClaim{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sa); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-home"}, home); err != nil {
		t.Fatal(err)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: name, UID: sa.UID}}
	if diff := cmp.Diff(want, home.OwnerReferences); diff != "" {
		t.Errorf("owners of claim %s-home (-want +got):\n%s", name, diff)
	}
}

// TestNotebookRefused: bad flags are refused, naming the flag, before anything is made.
func TestNotebookRefused(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--storage-class", "no-such-class"}, `--storage-class "no-such-class": no such StorageClass`},
		{[]string{"--size", "lots"}, `--size "lots": not a quantity`},
		{[]string{"--memory", "0"}, `--memory "0": must be positive`},
	}
	for _, tc := range cases {
		r := f.tfk8s(append([]string{"notebook", "start"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("start %v: %s\nwant an error containing %s", tc.args, r, tc.want)
		}
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(f.ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("claims after refused starts: %v %v", list.Items, err)
	}
}

// TestNotebookAccount: the notebook's ServiceAccount runs the CLI's job commands in its
// namespace, as the notebook's cells do, and nothing beyond them nor elsewhere: no
// Secret at all. A job submitted from the notebook reads the notebook's S3 Secret, as
// the notebook's environment says, and stop keeps that Secret while the job exists.
func TestNotebookAccount(t *testing.T) {
	f := newFixture(t)
	other := testutil.Namespace(t, k8sClient)
	f.mustSucceed("notebook", "start", "nb")
	as := "system:serviceaccount:" + f.ns + ":nb"

	// The CLI itself, impersonating the account: without the notebook's environment its
	// job would read a Secret of its own, which the notebook's admission policy refuses,
	// naming the notebook's; in it, the job reads the notebook's Secret.
	code := writeTree(t, map[string]string{"x.py": "print(1)\n"})
	if r := f.tfk8s("--as", as, "submit", code, "--name", "fromnb", "--image", "tf:2.16", "--", "python3", "x.py"); r.code == 0 ||
		!strings.Contains(r.stderr, "spec.storage.secretRef.name: Secret fromnb-storage") || !strings.Contains(r.stderr, "and nb-s3") {
		t.Errorf("submit as the notebook's account without TFK8S_STORAGE_SECRET: %s", r)
	}
	if jobs := f.jobs(); len(jobs) > 0 {
		t.Errorf("tfjobs after a refused submit: %v", jobs)
	}
	f.env["TFK8S_STORAGE_SECRET"] = deploymentEnv(t, f.ns, "nb")["TFK8S_STORAGE_SECRET"]
	f.mustSucceed("--as", as, "submit", code, "--name", "fromnb", "--image", "tf:2.16", "--", "python3", "x.py")
	if s := f.getJob("fromnb").Spec.Storage; s == nil || s.SecretRef.Name != "nb-s3" {
		t.Errorf("the job submitted from the notebook reads its S3 settings from %+v, want the notebook's Secret nb-s3", s)
	}
	if got := f.secrets(); !slices.Equal(got, []string{"nb-s3", "nb-token"}) {
		t.Errorf("secrets after a submit from the notebook: %v, want only the notebook's", got)
	}
	nbS3 := &corev1.Secret{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "nb-s3"}, nbS3); err != nil || len(nbS3.OwnerReferences) > 0 {
		t.Errorf("the notebook's S3 Secret after a submit from the notebook: owners %v, %v; want none", nbS3.OwnerReferences, err)
	}
	f.mustSucceed("--as", as, "list")
	f.mustSucceed("--as", as, "describe", "fromnb")
	f.mustSucceed("--as", as, "suspend", "fromnb")
	r := f.mustSucceed("notebook", "stop", "nb")
	if !strings.Contains(r.stdout, "its S3 Secret nb-s3 is kept while the jobs submitted from it exist, whose pods read it (fromnb)") {
		t.Errorf("stop with a job reading the notebook's Secret said: %s", r)
	}
	secretData(t, f.ns, "nb-s3")
	f.mustSucceed("notebook", "start", "nb")
	f.mustSucceed("--as", as, "delete", "fromnb")
	if r := f.tfk8s("--as", as, "-n", other, "submit", "--name", "elsewhere", "--image", "tf:2.16", "--", "python3", "x.py"); r.code == 0 ||
		!strings.Contains(r.stderr, "forbidden") {
		t.Errorf("submit into another namespace: %s", r)
	}

	cases := []struct {
		ns, verb, group, resource, sub string
		allowed                        bool
	}{
		{f.ns, "create", "tfk8s.io", "tfjobs", "", true},
		{f.ns, "get", "", "pods", "log", true},
		{other, "create", "tfk8s.io", "tfjobs", "", false},
		{f.ns, "get", "", "secrets", "", false},
		{f.ns, "create", "", "secrets", "", false},
		{f.ns, "delete", "", "secrets", "", false},
		{other, "get", "", "secrets", "", false},
		{f.ns, "list", "", "secrets", "", false},
		{f.ns, "watch", "", "secrets", "", false},
		{f.ns, "create", "", "pods", "", false},
		{f.ns, "create", "", "pods", "exec", false},
		{f.ns, "update", "apps", "deployments", "", false},
		{f.ns, "create", "rbac.authorization.k8s.io", "rolebindings", "", false},
		{"", "list", "", "namespaces", "", false},
		{"", "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s/%s %s in %q", tc.verb, tc.resource, tc.sub, tc.group, tc.ns), func(t *testing.T) {
			sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User:   as,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + f.ns, "system:authenticated"},
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: tc.ns, Verb: tc.verb, Group: tc.group,
					Resource: tc.resource, Subresource: tc.sub},
			}}
			got, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tc.allowed {
				t.Errorf("allowed %v, want %v (%s)", got.Status.Allowed, tc.allowed, got.Status.Reason)
			}
		})
	}
}

// secretData reads a Secret's data as strings.
func secretData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("reading secret %s: %v", name, err)
	}
	data := map[string]string{}
	for k, v := range s.Data {
		data[k] = string(v)
	}
	return data
}

// deploymentEnv reads the plain values of the environment of a Deployment's first
// container.
func deploymentEnv(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatalf("reading deployment %s: %v", name, err)
	}
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	return env
}
