package storage_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// TestReadLeadProgress: the end record takes the first lead replica's progress that
// is stored, chief before master before worker-0, without its series, with one GET
// per replica tried and none after the one found; a run with none ends without it.
func TestReadLeadProgress(t *testing.T) {
	srv := s3server.Start(t)
	counter := srv.Count(t)
	c := counter.Client(t)
	ctx := testContext(t)
	for i, tc := range []struct {
		name     string
		stored   []string // replicas that stored a progress record, at steps 1, 2, ...
		wantLead string
		wantGETs int
	}{
		{"the chief's", []string{"chief-0", "worker-0"}, "chief-0", 1},
		{"the master's", []string{"master-0", "worker-0"}, "master-0", 2},
		{"worker-0's", []string{"worker-0", "worker-1", "ps-0"}, "worker-0", 3},
		{"none from a lead replica", []string{"worker-1", "ps-0"}, "", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := storage.RunPrefix(storage.URI{Bucket: srv.Bucket, Key: "runs/"}, "team", fmt.Sprintf("job-%d", i), "0000000a")
			for step, replica := range tc.stored {
				b, err := json.Marshal(tfevents.Progress{Step: int64(step + 1), Series: map[string][]tfevents.Point{"loss": {{Step: 1, Value: 2}}}})
				if err != nil {
					t.Fatal(err)
				}
				body := string(b)
				if err := c.PutObject(ctx, run.Join(replica+"/", storage.ProgressName), strings.NewReader(body), int64(len(body)), storage.UploadOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			counter.Reset()
			lead, err := storage.ReadLeadProgress(ctx, c, run)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if lead != nil {
				got = lead.Replica
				if lead.Step != 1 || lead.Series != nil {
					t.Errorf("lead %s: step %d, %d series; want step 1 (its own record), no series", got, lead.Step, len(lead.Series))
				}
			}
			if got != tc.wantLead || counter.Get("GET") != tc.wantGETs {
				t.Errorf("lead %q after %d GETs, want %q after %d", got, counter.Get("GET"), tc.wantLead, tc.wantGETs)
			}
		})
	}
}
