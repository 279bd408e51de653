package install

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// asServiceAccount is the admin's config impersonating the chart's ServiceAccount: what
// the controller's pod would be, with the chart's RBAC and nothing else.
func asServiceAccount() *rest.Config {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + systemNamespace + ":" + serviceAccount}
	return cfg
}

// TestControllerRunsWithTheChartsRBAC runs the controller, leader election on, as the
// chart's ServiceAccount, and takes a job from creation to success: pods, Service,
// status, the tracking finalizers removed; its log has no "forbidden".
func TestControllerRunsWithTheChartsRBAC(t *testing.T) {
	installChart(t)
	// client-go's informers and leader election log through klog: a list or watch
	// refused shows there, so klog writes to the same log.
	logger := zap.New(zap.WriteTo(&logs), zap.Level(zapcore.Level(-2)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	defer klog.ClearLogger()
	mgr, err := controller.NewManager(asServiceAccount(), controller.ManagerOptions{
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  "0",
		LeaderElection:          true,
		LeaderElectionNamespace: systemNamespace,
	})
	if err != nil {
		t.Fatal(err)
	}
	testutil.RunManager(t, mgr)
	ctx := context.Background()

	ns := testutil.Namespace(t, k8sClient)
	job := testutil.MakeTFJob("least", ns).Workers(2).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	kubelet := testutil.Kubelet{Client: k8sClient}
	pods := []string{"least-worker-0", "least-worker-1"}
	waitJob(t, ns, "least", tfv1.JobCreated, len(pods))
	testutil.Eventually(t, "the job's Service", func(ctx context.Context) (bool, error) {
		return true, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "least"}, &corev1.Service{})
	})
	kubelet.SetRunning(t, ns, pods...)
	waitJob(t, ns, "least", tfv1.JobRunning, len(pods))
	for _, p := range pods {
		kubelet.SetExited(t, ns, p, 0)
	}
	waitJob(t, ns, "least", tfv1.JobSucceeded, 0)

	lease := &coordinationv1.Lease{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "tfk8s-controller.tfk8s.io"}, lease); err != nil {
		t.Fatalf("reading the leader election lease: %v", err)
	}
	t.Logf("leader: %s", *lease.Spec.HolderIdentity)
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Errorf("the controller was refused something its RBAC should allow:\n%s", forbiddenLines(logs.String()))
	}
}

// waitJob waits until the job has condition state and pods pods with the tracking
// finalizer (0: none left).
func waitJob(t *testing.T, ns, name string, state tfv1.JobState, pods int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("TFJob %s %s with %d tracked pods", name, state, pods), func(ctx context.Context) (bool, error) {
		job := &tfv1.TFJob{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
			return false, err
		}
		list := &corev1.PodList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: name}); err != nil {
			return false, err
		}
		tracked := 0
		for _, p := range list.Items {
			if len(p.Finalizers) > 0 {
				tracked++
			}
		}
		for _, c := range job.Status.Conditions {
			if c.Type == string(state) && c.Status == metav1.ConditionTrue {
				return tracked == pods, nil
			}
		}
		return false, nil
	})
}

func forbiddenLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestServiceAccountIsRefused: the controller's identity reads no Secret, cannot remove
// the CRD, nor grant itself more.
func TestServiceAccountIsRefused(t *testing.T) {
	installChart(t)
	ns := testutil.Namespace(t, k8sClient)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns}, StringData: map[string]string{"secretAccessKey": "x"}}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	sa, err := client.New(asServiceAccount(), client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		do      func(ctx context.Context) error
		allowed bool
	}{
		{"list pods (its job)", func(ctx context.Context) error { return sa.List(ctx, &corev1.PodList{}, client.InNamespace(ns)) }, true},
		{"read a job's Secret", func(ctx context.Context) error {
			return sa.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{})
		}, false},
		{"list Secrets", func(ctx context.Context) error { return sa.List(ctx, &corev1.SecretList{}) }, false},
		{"delete the TFJob CRD", func(ctx context.Context) error {
			return sa.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "tfjobs.tfk8s.io"}})
		}, false},
		{"bind itself cluster-admin", func(ctx context.Context) error {
			return sa.Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "tfk8s-escalate"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: systemNamespace}},
			})
		}, false},
		{"take a lease outside its namespace", func(ctx context.Context) error {
			return sa.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "tfk8s-test", Namespace: ns}})
		}, false},
		{"create a pod's exec session", func(ctx context.Context) error {
			return sa.SubResource("exec").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "any", Namespace: ns}}, &corev1.Pod{})
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do(context.Background())
			if tc.allowed && err != nil {
				t.Errorf("want allowed, got %v", err)
			}
			if !tc.allowed && !apierrors.IsForbidden(err) {
				t.Errorf("want forbidden, got %v", err)
			}
		})
	}
}
