package agent

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// liveProgress serves the lead replica's progress to the controller, which polls it
// into the job's status: the controller holds no storage credentials to read
// progress.json, and the pods get no right to write the API. Only a caller that
// knows the pod's UID is answered: the controller reads it from the pod, as does
// anyone who may read the job's pods, while another tenant's pod cannot guess it.
// maxLiveConns bounds the connections served at once.
const maxLiveConns = 8

type liveProgress struct {
	token string // the pod's UID
	total int64  // TFK8S_TOTAL_STEPS, 0 when unset
	body  atomic.Pointer[[]byte]
	srv   *http.Server
}

// serveLiveProgress starts serving on port of every address of the pod.
func serveLiveProgress(port int, podUID string, total int64, log *logger) (*liveProgress, error) {
	if podUID == "" {
		return nil, fmt.Errorf("serving progress on port %d: no pod UID (%s) to check callers by", port, tfjob.EnvPodUID)
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("serving progress: %w", err)
	}
	// One caller polls; a few connections at once are plenty, and a flood of them
	// must not cost the trainer's container its memory.
	ln = netutil.LimitListener(ln, maxLiveConns)
	l := &liveProgress{token: podUID, total: total}
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, MaxHeaderBytes: 4 << 10}
	go func() {
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("serving progress: %v", err)
		}
	}()
	return l, nil
}

// close stops serving; nil closes nothing.
func (l *liveProgress) close() {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
}

// set makes p what is served; nil leaves it.
func (l *liveProgress) set(p *tfevents.Progress) {
	if l == nil || p == nil {
		return
	}
	b, err := json.Marshal(newLiveProgress(p, l.total))
	if err == nil {
		l.body.Store(&b)
	}
}

// newLiveProgress is what is served of p: the step, the total (the program's, else
// envTotal), the rate and the last values of the loss and then of the other scalars
// by name, at most tfjob.MaxLiveMetrics. Names the status does not take
// (tfjob.MetricNameFits) are left out before counting, as the controller would drop
// them; so the body stays far under tfjob.MaxLiveProgressBytes.
func newLiveProgress(p *tfevents.Progress, envTotal int64) tfjob.LiveProgress {
	lp := tfjob.LiveProgress{Step: p.Step, TotalSteps: cmp.Or(p.TotalSteps, envTotal), StepsPerSecond: p.StepsPerSecond}
	fit := &tfevents.Progress{Scalars: maps.Clone(p.Scalars)} // the loss too is one the status takes
	maps.DeleteFunc(fit.Scalars, func(k string, _ tfevents.Last) bool { return !tfjob.MetricNameFits(k) })
	keys := slices.Sorted(maps.Keys(fit.Scalars))
	if loss, _, ok := fit.Loss(); ok {
		keys = append([]string{loss}, slices.DeleteFunc(keys, func(k string) bool { return k == loss })...)
	}
	for _, k := range keys[:min(len(keys), tfjob.MaxLiveMetrics)] {
		lp.Metrics = append(lp.Metrics, tfjob.LiveMetric{Name: k, Value: p.Scalars[k].Value.Display()})
	}
	return lp
}

func (l *liveProgress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path != tfjob.ProgressPath:
		http.NotFound(w, r)
	case r.Method != http.MethodGet:
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
	case subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+l.token)) != 1:
		http.Error(w, "the pod's UID is the bearer token", http.StatusUnauthorized)
	default:
		b := l.body.Load()
		if b == nil {
			w.WriteHeader(http.StatusNoContent) // no scalar read yet
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*b)
	}
}
