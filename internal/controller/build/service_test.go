package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestConstructService checks the job's one headless Service: names resolve before the
// pods are ready, it selects every pod of the job, and it belongs to the job.
func TestConstructService(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name:            "mnist",
		Namespace:       "ml",
		Labels:          map[string]string{tfv1.LabelJobName: "mnist"},
		OwnerReferences: []metav1.OwnerReference{ownerRef},
	}
	headless := func(ports ...corev1.ServicePort) corev1.ServiceSpec {
		return corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{tfv1.LabelJobName: "mnist"},
			PublishNotReadyAddresses: true,
			Ports:                    ports,
		}
	}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		want *corev1.Service
	}{
		{
			name: "DNS mode: the TensorFlow port",
			job:  testutil.MakeTFJob("mnist", "ml").UID("uid-1").Chief().PS(2).Workers(3).Obj(),
			want: &corev1.Service{ObjectMeta: meta, Spec: headless(
				corev1.ServicePort{Name: tfjob.PortName, Port: 2222, Protocol: corev1.ProtocolTCP})},
		},
		{
			name: "DNS mode: the port named tfjob-port",
			job:  testutil.MakeTFJob("mnist", "ml").UID("uid-1").PS(1).Workers(2).Port(5000).Obj(),
			want: &corev1.Service{ObjectMeta: meta, Spec: headless(
				corev1.ServicePort{Name: tfjob.PortName, Port: 5000, Protocol: corev1.ProtocolTCP})},
		},
		{
			name: "HostNetwork mode: names only, no ports",
			job:  testutil.MakeTFJob("mnist", "ml").UID("uid-1").PS(1).Workers(2).HostNetwork().Obj(),
			want: &corev1.Service{ObjectMeta: meta, Spec: headless()},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Service(tc.job)); diff != "" {
				t.Errorf("service (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructServicePorts checks that replica types listening on different ports
// each get a Service port, once, under a valid and distinct name.
func TestConstructServicePorts(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "ml").Chief().PS(2).Workers(3).Evaluator().Obj()
	withPort(job, tfv1.ReplicaTypeChief, 3000)
	withPort(job, tfv1.ReplicaTypePS, 4000)
	withPort(job, tfv1.ReplicaTypeWorker, 3000)

	svc := Service(job)
	var got []int32
	names := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		got = append(got, p.Port)
		if errs := validation.IsDNS1123Label(p.Name); len(errs) > 0 {
			t.Errorf("port name %q is invalid: %v", p.Name, errs)
		}
		if names[p.Name] {
			t.Errorf("port name %q used twice", p.Name)
		}
		names[p.Name] = true
	}
	if diff := cmp.Diff([]int32{3000, 4000, tfjob.DefaultPort}, got); diff != "" {
		t.Errorf("service ports (-want +got):\n%s", diff)
	}
}
