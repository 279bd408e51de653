package notebook

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// TestNotebookObjectsTakeTheCommandsDefaults: the dashboard's notebook, with no
// image or size typed, is tfk8s notebook start's with none given; a flag the form
// sets is checked as the command checks it.
func TestNotebookObjectsTakeTheCommandsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, image, cpu string
		wantImage        string
		wantErr          string
	}{
		{name: "defaults", wantImage: images.Jupyter},
		{name: "image", image: "registry.local/jupyter:1", cpu: "2", wantImage: "registry.local/jupyter:1"},
		{name: "bad cpu", cpu: "lots", wantErr: `--cpu "lots": not a quantity`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Objects("a", "lab", tc.image, tc.cpu, "", storage.Config{Bucket: "b"}, "t")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, obj := range objs {
				switch o := obj.(type) {
				case *corev1.PersistentVolumeClaim:
					q := o.Spec.Resources.Requests[corev1.ResourceStorage]
					got = append(got, "claim "+o.Name+" "+q.String())
				case *appsv1.Deployment:
					got = append(got, "deployment "+o.Name+" "+o.Spec.Template.Spec.Containers[0].Image)
				}
			}
			want := []string{"claim lab-home 10Gi", "deployment lab " + tc.wantImage}
			if d := cmp.Diff(want, got); d != "" || len(objs) != 8 {
				t.Errorf("objects (-want +got):\n%s; %d objects, want 8", d, len(objs))
			}
		})
	}
}
