package jobspec

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// deviceClassHelp and deviceSelectorHelp are the help of --device-class and
// --device-selector.
const (
	deviceClassHelp = "DeviceClass the --gpus come from, by Dynamic Resource Allocation rather than the " +
		string(tfjob.GPUResource) + " count: each replica but the parameter servers gets a claim of its own " +
		"(e.g. gpu.nvidia.com for NVIDIA's DRA driver)"
	deviceSelectorHelp = "CEL expression a --device-class device must satisfy, e.g. " +
		`device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-80GB"; repeatable`
)

// The API server's limits on a deviceClaim's selectors, checked here so that the
// error names --device-selector rather than the spec's field.
const (
	maxDeviceSelectors      = 32
	maxDeviceSelectorLength = 10240
)

// checkDevices checks --device-class and --device-selector: a class needs --gpus 1 or
// more, a selector needs a class (or, with -f, a manifest whose replicas already claim
// devices: Build checks that). The API server compiles the selectors once the job
// runs, and the job fails with InvalidDeviceClaim naming the one that does not.
func (p Params) checkDevices(v *Values, fromManifest bool) error {
	if len(p.DeviceSelectors) > maxDeviceSelectors {
		return fmt.Errorf("--device-selector given %d times: at most %d", len(p.DeviceSelectors), maxDeviceSelectors)
	}
	for i, s := range p.DeviceSelectors {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("--device-selector #%d is empty", i+1)
		}
		if len(s) > maxDeviceSelectorLength {
			return fmt.Errorf("--device-selector #%d is %d characters long: at most %d", i+1, len(s), maxDeviceSelectorLength)
		}
	}
	v.DeviceSelectors = p.DeviceSelectors
	if p.DeviceClass == "" {
		if len(p.DeviceSelectors) > 0 && !fromManifest {
			return fmt.Errorf("--device-selector %q needs --device-class: it selects among a class's devices", p.DeviceSelectors[0])
		}
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(p.DeviceClass); len(errs) > 0 {
		return fmt.Errorf("--device-class %q: not a DeviceClass name: %s", p.DeviceClass, strings.Join(errs, "; "))
	}
	if ptr.Deref(p.GPUs, 0) < 1 || *p.GPUs > 32 {
		return fmt.Errorf("--device-class %s needs --gpus from 1 to 32: how many devices each replica gets", p.DeviceClass)
	}
	v.DeviceClass = p.DeviceClass
	return nil
}

// applyDevices asks, for a replica that is not a parameter server, for its GPUs by a
// claim on --device-class instead of the device plugin's count. Without a class,
// --device-selector replaces the selectors of the manifest's own claims.
func applyDevices(spec *tfv1.ReplicaSpec, rt tfv1.ReplicaType, p Values) {
	if rt == tfv1.ReplicaTypePS {
		return
	}
	if p.DeviceClass == "" {
		if spec.DeviceClaim != nil && len(p.DeviceSelectors) > 0 {
			spec.DeviceClaim.Selectors = append([]string(nil), p.DeviceSelectors...)
		}
		return
	}
	removeGPUResources(mainContainer(&spec.Template.Spec), "")
	spec.DeviceClaim = &tfv1.DeviceClaim{
		DeviceClassName: p.DeviceClass,
		Count:           p.GPUs,
		Selectors:       append([]string(nil), p.DeviceSelectors...),
	}
}

// checkSelectorsApplied refuses --device-selector without --device-class over a
// manifest none of whose replicas claims devices: the selectors would select nothing.
func checkSelectorsApplied(job *tfv1.TFJob, p Values) error {
	if p.DeviceClass != "" || len(p.DeviceSelectors) == 0 {
		return nil
	}
	for _, spec := range job.Spec.TFReplicaSpecs {
		if spec != nil && spec.DeviceClaim != nil {
			return nil
		}
	}
	return fmt.Errorf("--device-selector %q needs --device-class: the manifest's replicas claim no devices", p.DeviceSelectors[0])
}

// deviceClaimOf is the deviceClaim of the first replica type that is not the
// parameter servers', as applyDevices sets them all alike.
func deviceClaimOf(v view) *tfv1.DeviceClaim {
	for _, rt := range tfv1.ReplicaTypes {
		if spec := v.job.Spec.TFReplicaSpecs[rt]; spec != nil && rt != tfv1.ReplicaTypePS {
			return spec.DeviceClaim
		}
	}
	return nil
}

// deviceClassOf reads --device-class, and --gpus from the claim's count.
func deviceClassOf(v view, p *Params) {
	if dc := deviceClaimOf(v); dc != nil {
		p.DeviceClass, p.GPUs = dc.DeviceClassName, ptr.To(ptr.Deref(dc.Count, 1))
	}
}

// deviceSelectorsOf reads --device-selector.
func deviceSelectorsOf(v view, p *Params) {
	if dc := deviceClaimOf(v); dc != nil {
		p.DeviceSelectors = append([]string(nil), dc.Selectors...)
	}
}
