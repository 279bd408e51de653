package cli

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// defaultRestartPolicy is what submit gives every replica: a pod that fails for a
// reason worth retrying (evicted, killed, a node lost) is re-created, a program's own
// error fails the job.
const defaultRestartPolicy = tfv1.RestartPolicyExitCode

// policyFlags are submit's flags for how a job retries, ends and is cleaned up.
type policyFlags struct {
	restartPolicy     string
	backoffLimit      int32
	activeDeadline    time.Duration
	ttlAfterFinished  time.Duration
	cleanPodPolicy    string
	exposeCredentials bool
}

func (f *policyFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.restartPolicy, "restart-policy", string(defaultRestartPolicy), "what a replica's failure does: "+enumNames(restartPolicies)+
		" (ExitCode: re-create the pod after a retryable exit code, 128 and above; fail on 1-127)")
	fs.Int32Var(&f.backoffLimit, "backoff-limit", 6, "restarts of the job's replicas, in all, before the job fails")
	fs.DurationVar(&f.activeDeadline, "active-deadline", 0, "fail the job once it has run this long, e.g. 2h (whole seconds)")
	fs.DurationVar(&f.ttlAfterFinished, "ttl-after-finished", 0, "delete the job this long after it finished, e.g. 24h (whole seconds; 0s: at once)")
	fs.StringVar(&f.cleanPodPolicy, "clean-pod-policy", string(tfv1.CleanPodPolicyRunning), "pods deleted once the job finished: "+enumNames(cleanPodPolicies))
	fs.BoolVar(&f.exposeCredentials, "expose-storage-credentials", false, "pass the S3 settings and credentials (AWS_*) on to the command; by default only the tfk8s agent sees them")
}

var (
	restartPolicies  = []tfv1.RestartPolicy{tfv1.RestartPolicyAlways, tfv1.RestartPolicyOnFailure, tfv1.RestartPolicyNever, tfv1.RestartPolicyExitCode}
	cleanPodPolicies = []tfv1.CleanPodPolicy{tfv1.CleanPodPolicyAll, tfv1.CleanPodPolicyRunning, tfv1.CleanPodPolicyNone}
)

// apply checks the flags and sets them on p: those given, and, when the job is built
// from flags alone, the defaults too, so that what render shows is what runs (a
// manifest's own policies stand).
func (f *policyFlags) apply(p *jobParams, changed func(string) bool, fromFlags bool) error {
	if changed("restart-policy") || fromFlags {
		rp, err := parseEnum("--restart-policy", f.restartPolicy, restartPolicies)
		if err != nil {
			return err
		}
		p.RestartPolicy = &rp
	}
	if changed("clean-pod-policy") || fromFlags {
		cp, err := parseEnum("--clean-pod-policy", f.cleanPodPolicy, cleanPodPolicies)
		if err != nil {
			return err
		}
		p.CleanPodPolicy = &cp
	}
	if changed("backoff-limit") || fromFlags {
		if f.backoffLimit < 0 {
			return fmt.Errorf("--backoff-limit %d: must not be negative", f.backoffLimit)
		}
		p.BackoffLimit = ptr.To(f.backoffLimit)
	}
	if changed("active-deadline") {
		s, err := wholeSeconds("--active-deadline", f.activeDeadline, math.MaxInt64)
		if err != nil {
			return err
		}
		if s == 0 {
			return fmt.Errorf("--active-deadline %v: must be at least 1s", f.activeDeadline)
		}
		p.ActiveDeadlineSeconds = ptr.To(s)
	}
	if changed("ttl-after-finished") {
		s, err := wholeSeconds("--ttl-after-finished", f.ttlAfterFinished, math.MaxInt32)
		if err != nil {
			return err
		}
		p.TTLSecondsAfterFinished = ptr.To(int32(s))
	}
	if changed("expose-storage-credentials") {
		p.ExposeCredentials = ptr.To(f.exposeCredentials)
	}
	return nil
}

// wholeSeconds converts a duration flag to seconds: not negative, a whole number of
// seconds (the API counts in seconds; rounding would change what the user asked), at
// most limit.
func wholeSeconds(flag string, d time.Duration, limit int64) (int64, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("%s %v: must not be negative", flag, d)
	case d%time.Second != 0:
		return 0, fmt.Errorf("%s %v: want whole seconds, e.g. 90s or 2h", flag, d)
	case int64(d/time.Second) > limit:
		return 0, fmt.Errorf("%s %v: at most %d seconds", flag, d, limit)
	}
	return int64(d / time.Second), nil
}

// parseEnum returns the value of values spelled s, in any case, or an error naming
// the flag and the values there are.
func parseEnum[T ~string](flag, s string, values []T) (T, error) {
	for _, v := range values {
		if strings.EqualFold(s, string(v)) {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s %q: want one of %s", flag, s, enumNames(values))
}

// enumNames lists values as "A|B|C".
func enumNames[T ~string](values []T) string {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	return strings.Join(names, "|")
}

// applyRunPolicy sets the policies of p on the job.
func applyRunPolicy(job *tfv1.TFJob, p jobParams) {
	if p.RestartPolicy != nil {
		for _, spec := range job.Spec.TFReplicaSpecs {
			if spec != nil {
				spec.RestartPolicy = *p.RestartPolicy
			}
		}
	}
	rp := &job.Spec.RunPolicy
	if p.CleanPodPolicy != nil {
		rp.CleanPodPolicy = ptr.To(*p.CleanPodPolicy)
	}
	if p.BackoffLimit != nil {
		rp.BackoffLimit = ptr.To(*p.BackoffLimit)
	}
	if p.ActiveDeadlineSeconds != nil {
		rp.ActiveDeadlineSeconds = ptr.To(*p.ActiveDeadlineSeconds)
	}
	if p.TTLSecondsAfterFinished != nil {
		rp.TTLSecondsAfterFinished = ptr.To(*p.TTLSecondsAfterFinished)
	}
}
