package cli

import (
	"fmt"
	"io"

	"github.com/tfk8s/tfk8s/internal/jobs"
)

// reportVerification writes what the verification found (what is wrong to w) and returns an error if a file is
// missing or differs.
func reportVerification(v jobs.Verification, out, w io.Writer, running bool) error {
	for _, r := range v.Unverified {
		fmt.Fprintf(w, "unverified: %s: stored no manifest to check its files against\n", r)
	}
	if len(v.Problems) == 0 {
		fmt.Fprintf(out, "%d files verified against the replicas' manifests\n", v.Verified)
		return nil
	}
	for _, p := range v.Problems {
		fmt.Fprintln(w, p)
	}
	hint := ""
	if running {
		hint = " (the job is running: its agents may be storing newer versions; get again once it finished)"
	}
	return fmt.Errorf("%d of %d files listed in the manifests are incomplete or mismatched%s",
		len(v.Problems), len(v.Problems)+v.Verified, hint)
}
