package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;create
// +kubebuilder:rbac:groups=resource.k8s.io,resources=deviceclasses,verbs=get

// leftTemplateWait is how long a job waits before looking again at a template that a
// deleted job of its name left, which garbage collection is about to delete. The
// controller watches no templates, so it asks again after this.
const leftTemplateWait = 2 * time.Second

// deviceClaimView is what observe reads of the job's deviceClaims, when its pods may be
// created: whether the API server serves resource.k8s.io/v1, and of each replica type
// that asks for devices, in order, whether its DeviceClass exists and its template.
type deviceClaimView struct {
	asked, served bool
	types         []deviceTypeView
}

// deviceTypeView is one replica type's DeviceClass and ResourceClaimTemplate as read:
// tmpl is nil when absent.
type deviceTypeView struct {
	rt           tfv1.ReplicaType
	classMissing bool
	tmpl         *resourcev1.ResourceClaimTemplate
}

// newDeviceClaim is a template to create, with the field of the job it comes from.
type newDeviceClaim struct {
	field string
	tmpl  *resourcev1.ResourceClaimTemplate
}

// deviceClaimTypes are the job's replica types that ask for devices, in order.
func deviceClaimTypes(job *tfv1.TFJob) []tfv1.ReplicaType {
	var out []tfv1.ReplicaType
	for _, rt := range slices.Sorted(maps.Keys(job.Spec.TFReplicaSpecs)) {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil && spec.DeviceClaim != nil {
			out = append(out, rt)
		}
	}
	return out
}

// readDeviceClaims reads, when observe found pods to create (w.starting), whether the
// API server serves DRA, the DeviceClasses the job names and its templates. Like
// readVolumes it reads around the cache, so the controller watches none of them, and
// stops at the first class that does not exist: its pods would wait Pending forever.
func (r *TFJobReconciler) readDeviceClaims(ctx context.Context, job *tfv1.TFJob) (deviceClaimView, error) {
	types := deviceClaimTypes(job)
	if len(types) == 0 {
		return deviceClaimView{}, nil
	}
	v := deviceClaimView{asked: true}
	gk := schema.GroupKind{Group: resourcev1.GroupName, Kind: "ResourceClaimTemplate"}
	if _, err := r.RESTMapper().RESTMapping(gk, resourcev1.SchemeGroupVersion.Version); meta.IsNoMatchError(err) {
		return v, nil
	} else if err != nil {
		return v, fmt.Errorf("discovering %s: %w", resourcev1.SchemeGroupVersion, err)
	}
	v.served = true
	for _, rt := range types {
		tv := deviceTypeView{rt: rt}
		class := job.Spec.TFReplicaSpecs[rt].DeviceClaim.DeviceClassName
		err := r.reader().Get(ctx, client.ObjectKey{Name: class}, &resourcev1.DeviceClass{})
		if apierrors.IsNotFound(err) {
			tv.classMissing = true
			v.types = append(v.types, tv)
			return v, nil
		}
		if err != nil {
			return v, fmt.Errorf("reading DeviceClass %s: %w", class, err)
		}
		name := build.DeviceClaimTemplateName(job.Name, rt)
		tmpl := &resourcev1.ResourceClaimTemplate{}
		err = r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, tmpl)
		if err == nil {
			tv.tmpl = tmpl
		} else if !apierrors.IsNotFound(err) {
			return v, fmt.Errorf("reading ResourceClaimTemplate %s: %w", name, err)
		}
		v.types = append(v.types, tv)
	}
	return v, nil
}

// decideDeviceClaims returns the templates to create before the job's pods; or how long
// to wait, when a template a deleted job of this name left is still being collected
// (as its pods and Services are waited for); or why the job's devices can never be
// had, naming the field: DRA not served, a DeviceClass that does not exist, or a
// template of the name that is another's.
func decideDeviceClaims(job *tfv1.TFJob, v deviceClaimView) (create []newDeviceClaim, wait time.Duration, invalid string) {
	if !v.asked {
		if len(deviceClaimTypes(job)) > 0 {
			return nil, unreadWait, "" // observe and decide disagreed: never create unchecked
		}
		return nil, 0, ""
	}
	if !v.served {
		return nil, 0, fmt.Sprintf("%s: the API server does not serve %s ResourceClaimTemplates: Dynamic Resource Allocation is off in this cluster; ask for devices by resources.limits instead",
			deviceClaimField(deviceClaimTypes(job)[0]), resourcev1.SchemeGroupVersion)
	}
	for _, tv := range v.types {
		field := deviceClaimField(tv.rt)
		dc := job.Spec.TFReplicaSpecs[tv.rt].DeviceClaim
		switch whose := templateOwner(job, tv.tmpl); {
		case tv.classMissing:
			return nil, 0, fmt.Sprintf("%s.deviceClassName: DeviceClass %q does not exist", field, dc.DeviceClassName)
		case tv.tmpl == nil:
			create = append(create, newDeviceClaim{field: field, tmpl: build.DeviceClaimTemplate(job, tv.rt, dc)})
		case whose == leftByNamesake:
			wait = leftTemplateWait
		case whose != "":
			return nil, 0, fmt.Sprintf("%s: ResourceClaimTemplate %s already exists and %s; rename the job", field, tv.tmpl.Name, whose)
		}
	}
	if wait > 0 {
		return nil, wait, ""
	}
	return create, 0, ""
}

// leftByNamesake is templateOwner's word for a template a deleted TFJob of the job's
// name left: garbage collection deletes it soon.
const leftByNamesake = "was left by a deleted job of this name"

// templateOwner says whose the existing template is, or "" when the job controls it: a
// template another made, or that a deleted job of the name left, must not hand this
// job's replicas its devices.
func templateOwner(job *tfv1.TFJob, tmpl *resourcev1.ResourceClaimTemplate) string {
	if tmpl == nil {
		return ""
	}
	switch owner := metav1.GetControllerOf(tmpl); {
	case owner == nil:
		return "is owned by nothing"
	case owner.UID == job.UID:
		return ""
	case owner.Kind == "TFJob" && owner.Name == job.Name:
		return leftByNamesake
	default:
		return fmt.Sprintf("belongs to %s %s (uid %s)", owner.Kind, owner.Name, owner.UID)
	}
}

// queuedDeviceClaim says why a job waiting in a Kueue queue may not ask for devices by
// deviceClaim, naming the field, or "". Kueue (v0.19) counts DRA claims only of
// DeviceClasses an admin maps in its deviceClassMappings, reading the
// ResourceClaimTemplates when the Workload is made, while tfk8s makes them only once
// admitted: the job's Workload carries no claim, and Kueue would admit it without
// counting its devices against the queue's quota.
func queuedDeviceClaim(job *tfv1.TFJob, queue string) string {
	types := deviceClaimTypes(job)
	if len(types) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the job waits in Kueue queue %s (label %s), and Kueue is not told of the devices a deviceClaim asks for, "+
		"so it would admit the job without counting them against the queue's quota; in a queue, ask for GPUs by resources.limits (nvidia.com/gpu), or remove the label",
		deviceClaimField(types[0]), queue, tfv1.LabelKueueQueue)
}

// deviceClaimField is the field of the job's spec a replica type's deviceClaim is.
func deviceClaimField(rt tfv1.ReplicaType) string {
	return fmt.Sprintf("spec.tfReplicaSpecs[%s].deviceClaim", rt)
}

// createDeviceClaims creates the templates decideDeviceClaims planned. One the API
// server refuses (a selector that does not compile) fails the job naming the field;
// one created meanwhile by someone else is an error: the next reconcile reads whose.
func (r *TFJobReconciler) createDeviceClaims(ctx context.Context, create []newDeviceClaim) (startOutcome, error) {
	for _, c := range create {
		err := r.Create(ctx, c.tmpl)
		switch {
		case apierrors.IsInvalid(err):
			return invalidDeviceClaim("%s", deviceClaimRefusal(c.field, err)), nil
		case err != nil:
			return startOutcome{}, fmt.Errorf("%s: creating ResourceClaimTemplate %s: %w", c.field, c.tmpl.Name, err)
		}
	}
	return startOutcome{}, nil
}

// invalidDeviceClaim fails the job with reason InvalidDeviceClaim.
func invalidDeviceClaim(format string, args ...any) startOutcome {
	return startOutcome{failReason: tfv1.ReasonInvalidDeviceClaim, failMessage: fmt.Sprintf(format, args...)}
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
