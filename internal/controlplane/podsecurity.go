package controlplane

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// SystemNamespaces are exempt from the Pod Security level of Options.PodSecurity: the
// cluster's own components may run there.
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// podSecurityLevels are the Pod Security Standards' levels.
var podSecurityLevels = []string{"privileged", "baseline", "restricted"}

// podSecurityConfig is kube-apiserver's admission configuration: the PodSecurity
// plugin enforces, audits and warns at level on every namespace that does not label
// itself otherwise, the system namespaces exempt.
const podSecurityConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: %[1]q
      enforce-version: latest
      audit: %[1]q
      audit-version: latest
      warn: %[1]q
      warn-version: latest
    exemptions:
      usernames: []
      runtimeClasses: []
      namespaces: [%[2]s]
`

// writePodSecurityConfig writes the admission configuration for level into dir and
// returns its path.
func writePodSecurityConfig(dir, level string) (string, error) {
	if !slices.Contains(podSecurityLevels, level) {
		return "", fmt.Errorf("pod security level %q: want one of %v", level, podSecurityLevels)
	}
	var namespaces string
	for i, ns := range SystemNamespaces {
		if i > 0 {
			namespaces += ", "
		}
		namespaces += fmt.Sprintf("%q", ns)
	}
	path := filepath.Join(dir, "admission.yaml")
	if err := safewrite.File(path, fmt.Appendf(nil, podSecurityConfig, level, namespaces), 0o600); err != nil {
		return "", fmt.Errorf("writing the admission configuration: %w", err)
	}
	return path, nil
}
