package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// MaxParallelReads bounds the S3 requests one command makes at once.
const MaxParallelReads = 8

// Parallel runs fn(0..n-1), at most limit at a time, and waits for them all.
func Parallel(n, limit int, fn func(i int)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// storedLogs are the logs one replica stored, by attempt.
type storedLogs struct {
	// attempts maps an attempt's number to the log of its main container.
	attempts map[int]storage.URI
	// single is the one log of an agent that kept no attempts (<replica>/logs/), if any.
	single storage.URI
}

// indexLogs finds the logs in a listing of the job's prefix base, by replica:
// <replica>/attempts/<n>/logs/<container>.log, and <replica>/logs/<container>.log
// as agents that kept one log per replica stored it. The main container's log is
// taken over another's.
func indexLogs(base storage.URI, objs []storage.Object) map[string]*storedLogs {
	main := tfjob.ContainerName + ".log"
	better := func(have storage.URI, file string) bool {
		return have.Key == "" || strings.HasSuffix(file, "/"+main) || file == main
	}
	logs := map[string]*storedLogs{}
	for _, obj := range objs {
		parts := strings.Split(strings.TrimPrefix(obj.URI.Key, base.Key), "/")
		if !strings.HasSuffix(parts[len(parts)-1], ".log") {
			continue
		}
		replica := parts[0]
		get := func() *storedLogs {
			if logs[replica] == nil {
				logs[replica] = &storedLogs{attempts: map[int]storage.URI{}}
			}
			return logs[replica]
		}
		switch {
		case len(parts) == 5 && parts[1] == "attempts" && parts[3] == "logs":
			n, err := strconv.Atoi(parts[2])
			if err != nil || n < 1 {
				continue
			}
			if s := get(); better(s.attempts[n], obj.URI.Key) {
				s.attempts[n] = obj.URI
			}
		case len(parts) == 3 && parts[1] == "logs":
			if s := get(); better(s.single, obj.URI.Key) {
				s.single = obj.URI
			}
		}
	}
	return logs
}

// numbers are the attempts stored, oldest first.
func (s *storedLogs) numbers() []int {
	return slices.Sorted(maps.Keys(s.attempts))
}

// Attempt says which attempt of a replica to print: the current one (the zero
// value), the one before it, or a number.
type Attempt struct {
	Previous bool
	Number   int
}

// missingAttemptError says that a replica lacks the attempt asked for.
type missingAttemptError struct{ msg string }

func (e *missingAttemptError) Error() string { return e.msg }

// pick returns the log of the chosen attempt of replica; s is nil for one that
// stored no log.
func (s *storedLogs) pick(replica string, which Attempt) (storage.URI, error) {
	if s == nil {
		s = &storedLogs{}
	}
	numbers := s.numbers()
	have := func() string {
		if len(numbers) == 0 {
			return "S3 holds no attempt of it"
		}
		return "S3 holds attempts " + joinInts(numbers)
	}
	switch {
	case which.Number > 0:
		if u, ok := s.attempts[which.Number]; ok {
			return u, nil
		}
		return storage.URI{}, &missingAttemptError{fmt.Sprintf("--attempt %d: replica %s has no attempt %d: %s", which.Number, replica, which.Number, have())}
	case which.Previous:
		if len(numbers) >= 2 {
			return s.attempts[numbers[len(numbers)-2]], nil
		}
		return storage.URI{}, &missingAttemptError{fmt.Sprintf("--previous: replica %s has no attempt before its current one: %s", replica, have())}
	case len(numbers) > 0:
		return s.attempts[numbers[len(numbers)-1]], nil
	case s.single.Key != "":
		return s.single, nil
	}
	return storage.URI{}, fmt.Errorf("no log of replica %s in S3: %w", replica, storage.ErrNotFound)
}

// joinInts renders numbers as "1, 2, 3".
func joinInts(numbers []int) string {
	s := make([]string, len(numbers))
	for i, n := range numbers {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
