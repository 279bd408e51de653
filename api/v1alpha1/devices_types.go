package v1alpha1

// DeviceClaim asks, by Dynamic Resource Allocation (resource.k8s.io/v1), for devices
// of a DeviceClass for each replica of a type. tfk8s makes one ResourceClaimTemplate
// of it per job and replica type, so each replica's pod gets a claim, and devices, of
// its own. It is immutable with the rest of tfReplicaSpecs.
type DeviceClaim struct {
	// DeviceClassName names the DeviceClass the devices come from, e.g.
	// gpu.nvidia.com for NVIDIA's DRA driver or gpu.tfk8s.io for the simulated
	// GPUs of local mode (tfk8s local up --dra-gpus).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="deviceClassName must be a DNS subdomain: lower-case letters, digits, '-' and '.'"
	DeviceClassName string `json:"deviceClassName"`

	// Count is how many devices each replica gets. The maximum is the API server's
	// limit on the devices of one allocation.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +optional
	Count *int64 `json:"count,omitempty"`

	// Selectors are CEL expressions over a device's attributes and capacity (e.g.
	// device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0); a
	// device is chosen only if every one is true. The API server compiles them when
	// tfk8s creates the ResourceClaimTemplate: one that does not compile fails the job
	// with reason InvalidDeviceClaim, naming the selector.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=10240
	// +listType=atomic
	// +optional
	Selectors []string `json:"selectors,omitempty"`
}
