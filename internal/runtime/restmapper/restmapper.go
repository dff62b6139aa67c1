// Package restmapper gives the manager a RESTMapper that remembers its
// answers.
package restmapper

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// New is the manager's MapperProvider: controller-runtime's
// dynamic RESTMapper (apiutil.NewDynamicRESTMapper), with the answers of
// RESTMapping remembered (NewCaching). It returns the error of
// building the dynamic mapper (an unusable rest.Config).
func New(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return NewCaching(m), nil
}

// NewCaching returns m with the answers of RESTMapping kept: the
// cache asks it whether a kind is namespaced on every Get and List, and the
// metadata client on every patch, and the dynamic mapper answers each time
// through a PriorityRESTMapper that allocates a fresh mapping (with
// thousands of NAC objects, a tenth of what the controller allocates;
// docs/performance.md). Only successful answers are kept, for a kind and at most one
// version, so a kind whose CRD is installed later is still found when it
// appears (the dynamic mapper rediscovers on a miss). A kept mapping is
// shared: callers must not modify it. Kinds whose preferred version changes
// while the controller runs keep the version first found, which is still
// served (Kubernetes keeps serving a CRD's stored versions). The other
// methods are m's.
func NewCaching(m meta.RESTMapper) meta.RESTMapper {
	return &cachingRESTMapper{RESTMapper: m, mappings: map[mappingKey]*meta.RESTMapping{}}
}

type mappingKey struct {
	gk      schema.GroupKind
	version string
}

type cachingRESTMapper struct {
	meta.RESTMapper
	mu       sync.RWMutex
	mappings map[mappingKey]*meta.RESTMapping
}

// RESTMapping implements meta.RESTMapper.
func (m *cachingRESTMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) > 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk: gk}
	if len(versions) == 1 {
		key.version = versions[0]
	}
	m.mu.RLock()
	mapping, ok := m.mappings[key]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.mappings[key] = mapping
	m.mu.Unlock()
	return mapping, nil
}
