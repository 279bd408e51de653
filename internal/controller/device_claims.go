package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;create

// ensureDeviceClaims creates the ResourceClaimTemplates of the replica types that ask
// for devices, before their pods: a pod whose template is missing gets no claim and
// waits unscheduled. Like the volumes' claims, they are read from the API server and only
// when pods are about to be created, so the controller watches none; garbage collection
// deletes them with the job, so the controller needs no delete. A template the API
// server refuses (a selector that does not compile) or whose name another holds fails
// the job, naming the field of the job's spec.
func (r *TFJobReconciler) ensureDeviceClaims(ctx context.Context, job *tfv1.TFJob) (startOutcome, error) {
	for _, rt := range slices.Sorted(maps.Keys(job.Spec.TFReplicaSpecs)) {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil || spec.DeviceClaim == nil {
			continue
		}
		tmpl := build.DeviceClaimTemplate(job, rt, spec.DeviceClaim)
		field := fmt.Sprintf("spec.tfReplicaSpecs[%s].deviceClaim", rt)
		err := r.Create(ctx, tmpl)
		switch {
		case apierrors.IsAlreadyExists(err):
			whose, err := r.deviceClaimTemplateOwner(ctx, job, tmpl.Name)
			if err != nil {
				return startOutcome{}, err
			}
			if whose != "" {
				return invalidDeviceClaim("%s: ResourceClaimTemplate %s already exists and %s; rename the job", field, tmpl.Name, whose), nil
			}
		case apierrors.IsInvalid(err):
			return invalidDeviceClaim("%s", deviceClaimRefusal(field, err)), nil
		case err != nil:
			return startOutcome{}, fmt.Errorf("creating ResourceClaimTemplate %s: %w", tmpl.Name, err)
		}
	}
	return startOutcome{}, nil
}

// invalidDeviceClaim fails the job with reason InvalidDeviceClaim.
func invalidDeviceClaim(format string, args ...any) startOutcome {
	return startOutcome{failReason: tfv1.ReasonInvalidDeviceClaim, failMessage: fmt.Sprintf(format, args...)}
}

// deviceClaimTemplateOwner says whose the existing template of the name is, or "" when
// the job controls it: a template a deleted job of the name left, still being
// collected, or another's, must not hand this job's replicas its devices.
func (r *TFJobReconciler) deviceClaimTemplateOwner(ctx context.Context, job *tfv1.TFJob, name string) (string, error) {
	tmpl := &resourcev1.ResourceClaimTemplate{}
	if err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, tmpl); err != nil {
		return "", fmt.Errorf("reading ResourceClaimTemplate %s: %w", name, err)
	}
	switch owner := metav1.GetControllerOf(tmpl); {
	case owner == nil:
		return "is owned by nothing", nil
	case owner.UID != job.UID:
		return fmt.Sprintf("belongs to %s %s (uid %s)", owner.Kind, owner.Name, owner.UID), nil
	}
	return "", nil
}

// deviceClaimRefusal says why the API server refused a template in the job's terms:
// its field spec.spec.devices.requests[0].exactly.selectors[1].cel.expression is the
// deviceClaim's selectors[1], and so on, so the user is told which line to fix.
func deviceClaimRefusal(field string, err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return field + ": " + err.Error()
	}
	var msgs []string
	for _, c := range status.Status().Details.Causes {
		f, ok := strings.CutPrefix(c.Field, "spec.spec.devices.requests[0].exactly.")
		if !ok {
			f = "(ResourceClaimTemplate) " + c.Field
		}
		msgs = append(msgs, field+"."+strings.TrimSuffix(f, ".cel.expression")+": "+c.Message)
	}
	return strings.Join(msgs, "; ")
}
