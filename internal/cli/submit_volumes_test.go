package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

func TestVolumeFlag(t *testing.T) {
	cases := []struct {
		value string
		want  tfv1.JobVolume
	}{{
		value: "name=data,size=10Gi,mount=/data,readOnly",
		want:  tfv1.JobVolume{Name: "data", MountPath: "/data", Size: ptr.To(resource.MustParse("10Gi")), ReadOnly: true},
	}, {
		value: "name=logs,size=1Gi,mount=/logs/,storageClass=fast,retain",
		want:  tfv1.JobVolume{Name: "logs", MountPath: "/logs", Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To("fast"), Retain: true},
	}, {
		value: "name=shared,existing=team-data,mount=/shared,readOnly=false",
		want:  tfv1.JobVolume{Name: "shared", MountPath: "/shared", ExistingClaim: "team-data"},
	}}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			p, err := parseSubmitFlags(t, "--name", "j", "--image", "tf", "--volume", tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]tfv1.JobVolume{tc.want}, p.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--volume", "name=data,size=ten,mount=/data"}, `--volume "name=data,size=ten,mount=/data": size "ten": not a quantity`},
		{[]string{"--volume", "name=data,size=0,mount=/data"}, `size "0": must be positive`},
		{[]string{"--volume", "name=data,size=1Gi"}, "mount is required"},
		{[]string{"--volume", "size=1Gi,mount=/data"}, "name is required"},
		{[]string{"--volume", "name=Data,size=1Gi,mount=/data"}, `name "Data": want a lower-case DNS label`},
		{[]string{"--volume", "name=data,size=1Gi,mount=data"}, `mount "data": want an absolute path`},
		{[]string{"--volume", "name=data,mount=/data"}, "give either size"},
		{[]string{"--volume", "name=data,size=1Gi,existing=c,mount=/data"}, "give either size"},
		{[]string{"--volume", "name=data,existing=c,storageClass=fast,mount=/data"}, "not for existing"},
		{[]string{"--volume", "name=data,size=1Gi,mount=/data,colour=red"}, `unknown key "colour"`},
		{[]string{"--volume", "name=data,size=1Gi,mount=/data", "--volume", "name=more,size=1Gi,mount=/data/"}, "another --volume has the name more or the mount /data"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseSubmitFlags(t, append([]string{"--name", "j", "--image", "tf"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTensorBoardFlag(t *testing.T) {
	p, err := parseSubmitFlags(t, "--name", "j", "--image", "tf", "--tensorboard")
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobspec.Build(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if tb := job.Spec.TensorBoard; tb == nil || !tb.Enabled {
		t.Errorf("spec.tensorboard %+v, want enabled", tb)
	}
}
