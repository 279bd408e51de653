package dashboard

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestJobPageLinksTensorBoard: the job page links status.tensorBoard's URL while the
// TensorBoard exists, says whether it is ready, and never links a script URL; it
// shows the command that opens it, and offers to bring back a deleted one.
func TestJobPageLinksTensorBoard(t *testing.T) {
	s, _ := newTestServer(t, false)
	expires := metav1.NewTime(time.Now().Add(90 * time.Minute))
	cases := []struct {
		name    string
		enabled bool
		status  *tfv1.TensorBoardStatus
		want    []string
		absent  []string
	}{
		{"none", false, nil, nil, []string{`id="tensorboard"`}},
		{"starting", true, &tfv1.TensorBoardStatus{ServiceName: "mnist-tensorboard", URL: "http://mnist-tensorboard.team.svc:6006"},
			[]string{`Starting at <a href="http://mnist-tensorboard.team.svc:6006">`, `data-copy="tfk8s tensorboard mnist -n team"`, "Keep open"}, nil},
		{"ready, expiring", true, &tfv1.TensorBoardStatus{URL: "http://mnist-tensorboard.team.svc:6006", Ready: true, ExpiresAt: &expires},
			[]string{"Ready at <a", "deleted in 89m"}, nil},
		{"deleted", true, nil, []string{`id="tensorboard-deleted"`, "Bring back", `action="/jobs/team/mnist/tensorboard"`}, nil},
		{"script URL", true, &tfv1.TensorBoardStatus{URL: "javascript:alert(1)", Ready: true},
			[]string{`href="#ZgotmplZ"`}, []string{`href="javascript:`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "team"}}
			job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: tc.enabled}
			job.Status.TensorBoard = tc.status
			w := httptest.NewRecorder()
			s.renderTemplate(w, 200, "job", "layout", pageData{Namespace: "team", Page: &JobPage{Job: job}})
			body := w.Body.String()
			if w.Code != 200 {
				t.Fatalf("rendering: %d %s", w.Code, body)
			}
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("the page lacks %q:\n%s", want, body)
				}
			}
			for _, absent := range tc.absent {
				if strings.Contains(body, absent) {
					t.Errorf("the page has %q", absent)
				}
			}
		})
	}
}

// TestGPUsCell: allocated/requested, and "-" only for a job that has no GPUs at all.
func TestGPUsCell(t *testing.T) {
	for _, tc := range []struct {
		allocated, requested int64
		want                 string
	}{{0, 0, "-"}, {0, 8, "0/8"}, {4, 8, "4/8"}, {8, 8, "8/8"}} {
		if got := gpus(tc.allocated, tc.requested); got != tc.want {
			t.Errorf("gpus(%d, %d) = %q, want %q", tc.allocated, tc.requested, got, tc.want)
		}
	}
}
