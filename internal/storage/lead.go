package storage

import (
	"context"

	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// ReadLeadProgress reads the progress record of a run's lead replica, the first of
// tfjob.LeadReplicas that stored one under run (the run's prefix), without its series:
// what a run's end record keeps. It is nil when none did, and nil with an error when
// a record could not be read; the end is then written without it. It costs one GET
// per lead replica tried.
func ReadLeadProgress(ctx context.Context, c *Client, run URI) (*tfjob.LeadProgress, error) {
	for _, replica := range tfjob.LeadReplicas {
		p := &tfevents.Progress{}
		found, err := c.GetJSON(ctx, run.Join(replica+"/", ProgressName), p)
		if err != nil {
			return nil, err
		}
		if found {
			return tfjob.NewLeadProgress(replica, p), nil
		}
	}
	return nil, nil
}
