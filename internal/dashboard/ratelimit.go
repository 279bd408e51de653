package dashboard

import (
	"net"
	"sync"
	"time"
)

// Sign-in attempts: a burst of signInBurst from one client address, then one every
// signInEvery. A token guessed at that pace takes longer than the universe has.
const (
	signInBurst = 5
	signInEvery = 12 * time.Second
	// maxLimitedAddresses bounds the addresses remembered; past it, those back to a
	// full burst are forgotten first.
	maxLimitedAddresses = 10000
)

// rateLimit allows each client address a burst of attempts, then one per interval: a
// token bucket per address.
type rateLimit struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	byAddr map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newRateLimit(burst int, every time.Duration) *rateLimit {
	return &rateLimit{burst: burst, every: every, now: time.Now, byAddr: map[string]*bucket{}}
}

// allow takes an attempt of the client at remoteAddr (host:port; the port is not the
// client's); false, with the wait until its next attempt, when it has none left.
func (l *rateLimit) allow(remoteAddr string) (bool, time.Duration) {
	addr := remoteAddr
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		addr = host
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.byAddr[addr]
	if b == nil {
		if len(l.byAddr) >= maxLimitedAddresses {
			l.forgetFull(now)
		}
		b = &bucket{tokens: float64(l.burst), last: now}
		l.byAddr[addr] = b
	}
	b.tokens = min(float64(l.burst), b.tokens+float64(now.Sub(b.last))/float64(l.every))
	b.last = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(l.every))
	}
	b.tokens--
	return true, 0
}

// forgetFull forgets the addresses whose bucket is full again: they lose nothing.
func (l *rateLimit) forgetFull(now time.Time) {
	for addr, b := range l.byAddr {
		if b.tokens+float64(now.Sub(b.last))/float64(l.every) >= float64(l.burst) {
			delete(l.byAddr, addr)
		}
	}
}
