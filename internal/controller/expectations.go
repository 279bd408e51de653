package controller

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// expectationTimeout bounds how long a job waits for the cache to show what tfk8s did;
// past it, tfk8s trusts the cache again (an event may have been lost).
const expectationTimeout = 2 * time.Minute

// expectations remember, per job, the writes the informer cache has not shown yet: pods
// created, pods deleted, and the job's own last status write. Until the cache has caught
// up, a reconcile of that job creates and deletes nothing, so a stale cache can never
// produce a duplicate pod or re-run a replica whose success is already recorded.
type expectations struct {
	mu   sync.Mutex
	jobs map[types.UID]*jobExpectations
}

type jobExpectations struct {
	creates map[string]bool    // names of pods created
	deletes map[types.UID]bool // UIDs of pods deleted
	// staleVersion is the job's resourceVersion before tfk8s's last status write: a
	// cached job still at that version has not seen the write.
	staleVersion string
	since        time.Time
}

func newExpectations() *expectations {
	return &expectations{jobs: map[types.UID]*jobExpectations{}}
}

func (e *expectations) get(job types.UID) *jobExpectations {
	je := e.jobs[job]
	if je == nil {
		je = &jobExpectations{creates: map[string]bool{}, deletes: map[types.UID]bool{}}
		e.jobs[job] = je
	}
	je.since = time.Now()
	return je
}

// expectCreated records that a pod of the job was created.
func (e *expectations) expectCreated(job types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).creates[name] = true
}

// creationFailed forgets a creation that did not happen.
func (e *expectations) creationFailed(job types.UID, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if je := e.jobs[job]; je != nil {
		delete(je.creates, name)
	}
}

// expectDeleted records that a pod of the job was deleted.
func (e *expectations) expectDeleted(job types.UID, pod types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).deletes[pod] = true
}

// expectStatusWritten records the job's resourceVersion before a status write.
func (e *expectations) expectStatusWritten(job types.UID, before string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.get(job).staleVersion = before
}

// satisfied reports whether the cache, as seen in the job's resourceVersion and pods,
// shows every write tfk8s expects, forgetting those it shows.
func (e *expectations) satisfied(job types.UID, resourceVersion string, pods []*corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	je := e.jobs[job]
	if je == nil {
		return true
	}
	if time.Since(je.since) > expectationTimeout {
		delete(e.jobs, job)
		return true
	}
	if je.staleVersion != "" && je.staleVersion == resourceVersion {
		return false
	}
	je.staleVersion = ""
	if len(je.creates) > 0 || len(je.deletes) > 0 {
		present := make(map[string]bool, len(pods))
		live := make(map[types.UID]bool, len(pods))
		for _, p := range pods {
			present[p.Name] = true
			if p.DeletionTimestamp == nil {
				live[p.UID] = true
			}
		}
		for name := range je.creates {
			if present[name] {
				delete(je.creates, name)
			}
		}
		for uid := range je.deletes {
			if !live[uid] {
				delete(je.deletes, uid)
			}
		}
	}
	if len(je.creates) == 0 && len(je.deletes) == 0 {
		delete(e.jobs, job)
		return true
	}
	return false
}

// forget drops everything expected of a job, once it is gone.
func (e *expectations) forget(job types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.jobs, job)
}
