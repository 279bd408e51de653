package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// API versions submit -f accepts.
const (
	kubeflowAPIVersion = "kubeflow.org/v1"
	// kubeflowManagedBy is the runPolicy.managedBy of Kubeflow's training operator: it
	// would make tfk8s leave the job alone, so conversion drops it.
	kubeflowManagedBy = "kubeflow.org/training-operator"
)

// Decode decodes a TFJob manifest, YAML or JSON, of one document: a tfk8s.io
// one as it is, a kubeflow.org/v1 one converted. Decoding is strict: a field tfk8s does
// not know is an error naming it. The status is dropped.
func Decode(data []byte) (*tfv1.TFJob, error) {
	obj, err := singleDocument(data)
	if err != nil {
		return nil, err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	switch apiVersion {
	case tfv1.GroupVersion.String():
	case kubeflowAPIVersion:
		if err := convertKubeflow(obj); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("apiVersion %q: want %s or %s", apiVersion, tfv1.GroupVersion, kubeflowAPIVersion)
	}
	if kind != "TFJob" {
		return nil, fmt.Errorf("kind %q: want TFJob", kind)
	}
	delete(obj, "status")
	job := &tfv1.TFJob{}
	if err := decodeStrict(obj, job, "field tfk8s cannot honour"); err != nil {
		return nil, err
	}
	return job, nil
}

// decodeStrict decodes obj into out, refusing a field out has no place for with an
// error that starts with refusal and names the field (each strict error does, e.g.
// unknown field "spec.cleanPodPolicy").
func decodeStrict(obj map[string]any, out any, refusal string) error {
	js, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding manifest: %w", err)
	}
	strict, err := sigsjson.UnmarshalStrict(js, out, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("decoding TFJob: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("%s: %w", refusal, errors.Join(strict...))
	}
	return nil
}

// DecodeKubeflow decodes a kubeflow.org/v1 TFJob manifest, YAML or JSON, of one
// document, strictly: a field Kubeflow's TFJob does not have is an error naming it.
func DecodeKubeflow(data []byte) (*kubeflowv1.TFJob, error) {
	obj, err := singleDocument(data)
	if err != nil {
		return nil, err
	}
	if apiVersion, kind := obj["apiVersion"], obj["kind"]; apiVersion != kubeflowAPIVersion || kind != "TFJob" {
		return nil, fmt.Errorf("apiVersion %v, kind %v: want a TFJob of %s", apiVersion, kind, kubeflowAPIVersion)
	}
	job := &kubeflowv1.TFJob{}
	if err := decodeStrict(obj, job, "field Kubeflow's TFJob does not have"); err != nil {
		return nil, err
	}
	return job, nil
}

// singleDocument parses the one YAML or JSON document of a manifest.
func singleDocument(data []byte) (map[string]any, error) {
	dec := utilyaml.NewYAMLToJSONDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing manifest: %w", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			return nil, fmt.Errorf("parsing manifest: want an object: %w", err)
		}
		docs = append(docs, obj)
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("parsing manifest: want one TFJob, found %d documents", len(docs))
	}
	return docs[0], nil
}

// convertKubeflow rewrites a kubeflow.org/v1 TFJob as a tfk8s one, in place: the
// apiVersion, the replica types' spelling (Kubeflow accepts "worker" for "Worker"), and
// Kubeflow's own runPolicy.managedBy. Every other field of Kubeflow's TFJob has the same
// name and meaning in tfk8s.
func convertKubeflow(obj map[string]any) error {
	obj["apiVersion"] = tfv1.GroupVersion.String()
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil
	}
	if specs, ok := spec["tfReplicaSpecs"].(map[string]any); ok {
		normalised := map[string]any{}
		for key, v := range specs {
			rt, ok := replicaTypeOf(key)
			if !ok {
				return fmt.Errorf("field spec.tfReplicaSpecs.%s: unknown replica type (want one of %s)", key, replicaTypeNames())
			}
			if _, dup := normalised[string(rt)]; dup {
				return fmt.Errorf("field spec.tfReplicaSpecs.%s: replica type %s is given twice", key, rt)
			}
			normalised[string(rt)] = v
		}
		spec["tfReplicaSpecs"] = normalised
	}
	if rp, ok := spec["runPolicy"].(map[string]any); ok && rp["managedBy"] == kubeflowManagedBy {
		delete(rp, "managedBy")
	}
	return nil
}

// replicaTypeOf returns the replica type spelled key in any case.
func replicaTypeOf(key string) (tfv1.ReplicaType, bool) {
	for _, rt := range tfv1.ReplicaTypes {
		if strings.EqualFold(key, string(rt)) {
			return rt, true
		}
	}
	return "", false
}

// replicaTypeNames lists the replica types, for messages.
func replicaTypeNames() string {
	names := make([]string, len(tfv1.ReplicaTypes))
	for i, rt := range tfv1.ReplicaTypes {
		names[i] = string(rt)
	}
	return strings.Join(names, ", ")
}
