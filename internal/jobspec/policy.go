package jobspec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

var (
	restartPolicies  = []tfv1.RestartPolicy{tfv1.RestartPolicyAlways, tfv1.RestartPolicyOnFailure, tfv1.RestartPolicyNever, tfv1.RestartPolicyExitCode}
	cleanPodPolicies = []tfv1.CleanPodPolicy{tfv1.CleanPodPolicyAll, tfv1.CleanPodPolicyRunning, tfv1.CleanPodPolicyNone}
)

// checkPolicy checks how the job retries, ends and is cleaned up, and sets it on v:
// what is given, and, for a job built without a manifest, the defaults too, so that
// what render shows is what runs (a manifest's own policies stand).
func (p Params) checkPolicy(v *Values, fromManifest bool) error {
	if p.RestartPolicy != nil || !fromManifest {
		rp, err := parseEnum("--restart-policy", ptr.Deref(p.RestartPolicy, string(DefaultRestartPolicy)), restartPolicies)
		if err != nil {
			return err
		}
		v.RestartPolicy = &rp
	}
	if p.CleanPodPolicy != nil || !fromManifest {
		cp, err := parseEnum("--clean-pod-policy", ptr.Deref(p.CleanPodPolicy, string(DefaultCleanPodPolicy)), cleanPodPolicies)
		if err != nil {
			return err
		}
		v.CleanPodPolicy = &cp
	}
	if p.BackoffLimit != nil || !fromManifest {
		limit := ptr.Deref(p.BackoffLimit, DefaultBackoffLimit)
		if limit < 0 {
			return fmt.Errorf("--backoff-limit %d: must not be negative", limit)
		}
		v.BackoffLimit = ptr.To(limit)
	}
	if d := p.ActiveDeadline; d != nil {
		s, err := wholeSeconds("--active-deadline", d.Duration, math.MaxInt64)
		if err != nil {
			return err
		}
		if s == 0 {
			return fmt.Errorf("--active-deadline %v: must be at least 1s", d.Duration)
		}
		v.ActiveDeadlineSeconds = ptr.To(s)
	}
	if d := p.TTLAfterFinished; d != nil {
		s, err := wholeSeconds("--ttl-after-finished", d.Duration, math.MaxInt32)
		if err != nil {
			return err
		}
		v.TTLSecondsAfterFinished = ptr.To(int32(s))
	}
	v.ExposeCredentials = p.ExposeStorageCredentials
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
func applyRunPolicy(job *tfv1.TFJob, p Values) {
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
