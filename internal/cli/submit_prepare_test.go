package cli

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// TestSubmissionBuild: the build step alone makes the job of its parameters, and
// refuses a TensorBoard with no summaries to show, naming the flags to add.
func TestSubmissionBuild(t *testing.T) {
	tests := []struct {
		name    string
		p       jobspec.Values
		wantErr string
	}{
		{name: "a plain job", p: jobspec.Values{Name: "mnist", Image: "tf", Workers: ptr.To[int32](2)}},
		{name: "TensorBoard without summaries", p: jobspec.Values{Name: "mnist", Image: "tf", TensorBoard: ptr.To(true)},
			wantErr: "--tensorboard: the job stores no summaries"},
		{name: "TensorBoard over artifacts", p: jobspec.Values{Name: "mnist", Image: "tf", TensorBoard: ptr.To(true), Command: []string{"python3"},
			ArtifactPaths: []string{"logs"}, ArtifactsDestination: "s3://b/runs/"}},
		{name: "no name", p: jobspec.Values{Image: "tf"}, wantErr: "--name is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &submission{p: tc.p}
			err := s.build(nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("build: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("build: %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && (s.job == nil || s.job.Name != "mnist"):
				t.Errorf("build made %v, want the job mnist", s.job)
			}
		})
	}
}
