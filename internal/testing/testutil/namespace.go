package testutil

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace creates a namespace for t, named after the test, waits until its default
// ServiceAccount exists (the API server refuses pods before), and deletes it when t ends.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	ctx := context.Background()
	prefix := strings.ToLower(t.Name())
	prefix = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, prefix)
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.Trim(prefix, "-") + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("waiting for the default ServiceAccount of namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}
