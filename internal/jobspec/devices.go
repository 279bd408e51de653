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

// checkDevices checks --device-class and --device-selector: a class needs --gpus 1 or
// more, a selector needs a class. The API server compiles the selectors once the job
// runs, and the job fails with InvalidDeviceClaim naming the one that does not.
func (p Params) checkDevices(v *Values, _ bool) error {
	if p.DeviceClass == "" {
		if len(p.DeviceSelectors) > 0 {
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
	for i, s := range p.DeviceSelectors {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("--device-selector #%d is empty", i+1)
		}
	}
	v.DeviceClass, v.DeviceSelectors = p.DeviceClass, p.DeviceSelectors
	return nil
}

// applyDevices asks, for a replica that is not a parameter server, for its GPUs by a
// claim on --device-class instead of the device plugin's count.
func applyDevices(spec *tfv1.ReplicaSpec, rt tfv1.ReplicaType, p Values) {
	if p.DeviceClass == "" || rt == tfv1.ReplicaTypePS {
		return
	}
	c := mainContainer(&spec.Template.Spec)
	delete(c.Resources.Limits, tfjob.GPUResource)
	delete(c.Resources.Requests, tfjob.GPUResource)
	spec.DeviceClaim = &tfv1.DeviceClaim{
		DeviceClassName: p.DeviceClass,
		Count:           p.GPUs,
		Selectors:       append([]string(nil), p.DeviceSelectors...),
	}
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
