package controller

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newRESTMapper is controller-runtime's discovering mapper, remembering each mapping it
// found. controller-runtime asks for the TFJob's mapping on every event of a pod or
// Service the job owns, to learn whether the owner is namespaced, and the discovering
// mapper answers by asking every API group in turn, allocating some 6 KB a call: 150 MB
// of garbage while a restarted controller reads 20,000 pods, and the heap's peak with it.
// A mapping, once found, holds for the process's life: a kind's scope never changes, and
// a served version's removal already breaks a running controller. Failures are not kept,
// so a CRD installed later (Kueue's, a gang scheduler's) is found on the next call.
func newRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &cachedMapper{RESTMapper: m, mappings: map[mappingKey]meta.RESTMapping{}}, nil
}

// cachedMapper is a RESTMapper remembering the mappings RESTMapping returned.
type cachedMapper struct {
	meta.RESTMapper
	mu       sync.RWMutex
	mappings map[mappingKey]meta.RESTMapping
}

// mappingKey is one RESTMapping question: a kind and the versions it may be in.
type mappingKey struct {
	kind     schema.GroupKind
	versions string
}

// RESTMapping answers from what it found before, else asks the discovering mapper.
func (m *cachedMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{kind: gk, versions: strings.Join(versions, ",")}
	m.mu.RLock()
	found, ok := m.mappings[key]
	m.mu.RUnlock()
	if ok {
		// A copy: callers may change what they are given.
		return &found, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.mappings[key] = *mapping
	m.mu.Unlock()
	return mapping, nil
}
