package dashboard

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// nameRule checks a value as the name of one kind of object, as the API server
// checks that object's name.
type nameRule struct {
	kind  string
	check func(string) []string
}

var (
	// namespaceName is a namespace's: a DNS-1123 label.
	namespaceName = nameRule{"namespace", validation.IsDNS1123Label}
	// jobName is a TFJob's: a DNS-1035 label, as the CRD's CEL rule demands of
	// metadata.name (it names the job's Service).
	jobName = nameRule{"tfjob", validation.IsDNS1035Label}
	// notebookName is a notebook's: a DNS-1035 label (it names a Service) with room
	// for the "-home" of its claim.
	notebookName = nameRule{"notebook", func(s string) []string {
		if errs := validation.IsDNS1035Label(s); len(errs) > 0 {
			return errs
		}
		if len(s) > validation.DNS1123LabelMaxLength-len("-home") {
			return []string{fmt.Sprintf("must be no more than %d characters", validation.DNS1123LabelMaxLength-len("-home"))}
		}
		return nil
	}}
	// replicaName is a replica's, "worker-0": a DNS-1123 label, as the pod name it
	// ends.
	replicaName = nameRule{"replica", validation.IsDNS1123Label}
	// runName is a run's id: 8 hex digits, or storage.LegacyRun.
	runName = nameRule{"run", func(s string) []string {
		if s != storage.LegacyRun && !storage.IsRunID(s) {
			return []string{"must be 8 hex digits or " + storage.LegacyRun}
		}
		return nil
	}}
)

// checkNames checks every object name a request carries, in its path or its form,
// as the name of the object it stands for. A value no such object can have (a "/",
// a "#", a "?" decoded from the path) is refused before it reaches a page, a link
// or the cluster, so that no page renders a link that leads elsewhere than it says.
func checkNames(r *http.Request) error {
	nameOfPath := jobName
	if strings.HasPrefix(r.URL.Path, "/workspace/") {
		nameOfPath = notebookName
	}
	values := []struct {
		value string
		rule  nameRule
	}{
		{r.PathValue("namespace"), namespaceName},
		{r.PathValue("name"), nameOfPath},
		{r.PathValue("run"), runName},
		{strings.TrimSpace(r.FormValue("namespace")), namespaceName},
		{r.FormValue("clone"), jobName},
		{strings.ToLower(r.FormValue("replica")), replicaName},
	}
	for _, v := range values {
		if v.value == "" {
			continue
		}
		if errs := v.rule.check(v.value); len(errs) > 0 {
			return fmt.Errorf("%w: %q is no %s name: %s", ErrNotFound, v.value, v.rule.kind, strings.Join(errs, "; "))
		}
	}
	return nil
}
