package cli

import (
	"fmt"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// volumeSummary says where a job's volume is mounted and what backs it.
func volumeSummary(job *tfv1.TFJob, v tfv1.JobVolume) string {
	mode := "read-write"
	if v.ReadOnly {
		mode = "read-only"
	}
	if v.ExistingClaim != "" {
		return fmt.Sprintf("%s at %s (%s), existing claim %s", v.Name, v.MountPath, mode, v.ExistingClaim)
	}
	class := "default class"
	if v.StorageClassName != nil {
		class = "class " + *v.StorageClassName
	}
	kept := "deleted with the job"
	if v.Retain {
		kept = "retained"
	}
	return fmt.Sprintf("%s at %s (%s), claim %s-%s, %s, %s, %s", v.Name, v.MountPath, mode, job.Name, v.Name, v.Size.String(), class, kept)
}

// tensorBoardSummary says where the job's TensorBoard is and how long it stays.
func tensorBoardSummary(job *tfv1.TFJob, now time.Time) string {
	st := job.Status.TensorBoard
	if st == nil {
		if job.Status.CompletionTime != nil {
			return "deleted after its TTL; `tfk8s tensorboard " + job.Name + "` brings it back"
		}
		return "starting"
	}
	state := "starting"
	if st.Ready {
		state = "ready"
	}
	s := fmt.Sprintf("%s, %s (open it with `tfk8s tensorboard %s`)", st.URL, state, job.Name)
	if st.ExpiresAt != nil {
		s += fmt.Sprintf("; deleted in %s", humanSince(now, st.ExpiresAt.Time))
	}
	return s
}
