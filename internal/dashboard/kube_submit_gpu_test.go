package dashboard

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/images"
)

// TestFormGPUsWithoutImage: the form's job with GPUs per replica and no image runs in
// the CUDA image, as tfk8s submit --gpus does; without GPUs the image is still asked for.
func TestFormGPUsWithoutImage(t *testing.T) {
	job, err := FormJob(SubmitRequest{Namespace: "a", Command: "python3 train.py", Flags: map[string]string{
		"name": "gpu", "gpus": "1", "image": ""}})
	if err != nil {
		t.Fatal(err)
	}
	got := job.Spec.TFReplicaSpecs["Worker"].Template.Spec.Containers[0].Image
	if d := cmp.Diff(images.TensorFlowGPU, got); d != "" {
		t.Errorf("worker's image (-want +got):\n%s", d)
	}
	_, err = FormJob(SubmitRequest{Namespace: "a", Command: "python3 train.py", Flags: map[string]string{"name": "cpu", "image": ""}})
	if want := "--image is required: replica type Worker has no image"; err == nil || err.Error() != want {
		t.Errorf("no GPUs, no image: error %v, want %q", err, want)
	}
}
