package localcluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// hostPathPolicyName names the admission policy that keeps a local cluster's hostPath
// volumes under Options.AllowedHostPaths. The local cluster's own objects do not
// carry tfk8s in their names: they are not part of tfk8s's install.
const hostPathPolicyName = "local-cluster-host-paths"

// hostPathExpression is true for a pod whose hostPath volumes all lie in allowed:
// each path one of them or under one. The API server already refuses a path with
// "..", so a prefix is a directory's contents.
func hostPathExpression(allowed []string) string {
	return fmt.Sprintf("!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath) || %s.exists(a, v.hostPath.path == a || v.hostPath.path.startsWith(a + '/')))",
		celStringList(allowed))
}

// celStringList writes strings as a CEL list literal.
func celStringList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = strconv.Quote(strings.TrimSuffix(s, "/"))
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// hostPathMessage names the first refused path and what is allowed.
func hostPathMessage(allowed []string) string {
	list := "none"
	if len(allowed) > 0 {
		list = strings.Join(allowed, ", ")
	}
	return fmt.Sprintf("'spec.volumes: hostPath ' + object.spec.volumes.filter(v, has(v.hostPath) && !(%s.exists(a, v.hostPath.path == a || v.hostPath.path.startsWith(a + '/'))))[0].hostPath.path + ' is not allowed on this local cluster; allowed host paths: %s'",
		celStringList(allowed), list)
}

// ensureHostPathPolicy creates or updates the admission policy and its binding that
// refuse, in every namespace, a pod mounting a host path outside allowed. Pod
// Security's baseline level refuses every hostPath in user namespaces already; this
// holds where an administrator relaxed it, and in the system namespaces.
func ensureHostPathPolicy(ctx context.Context, c client.Client, allowed []string) error {
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: hostPathPolicyName}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, policy, func() error {
		policy.Spec = admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression:        hostPathExpression(allowed),
				MessageExpression: hostPathMessage(allowed),
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing admission policy %s: %w", hostPathPolicyName, err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: hostPathPolicyName}}
	_, err = controllerutil.CreateOrUpdate(ctx, c, binding, func() error {
		binding.Spec = admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        hostPathPolicyName,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing admission policy binding %s: %w", hostPathPolicyName, err)
	}
	return nil
}
