package dashboard

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"time"
)

// Failed sign-ins are counted twice: per (user, client address), a burst of
// signInBurst then one every signInEvery, and per user across all addresses, a burst
// of userBurst at the same pace. Behind an ingress every client shares one address,
// so a count per address alone let one client lock every user out; now it holds back
// only the user it names. A token guessed at that pace takes longer than the universe
// has.
const (
	signInBurst = 5
	userBurst   = 20
	signInEvery = 12 * time.Second
	// maxLimitedKeys bounds each map of buckets; past it, the buckets back to a full
	// burst are forgotten first, then the one left alone longest.
	maxLimitedKeys = 10000
)

// signInLimit counts the failed sign-ins of each (user, address) and of each user. A
// user is the one a token claims (claimedUser), unchecked: a claim can only spend the
// attempts of the user it names, never reach another's.
type signInLimit struct {
	now func() time.Time

	mu     sync.Mutex
	byPair *buckets
	byUser *buckets
}

func newSignInLimit(now func() time.Time) *signInLimit {
	return &signInLimit{now: now, byPair: newBuckets(signInBurst, signInEvery), byUser: newBuckets(userBurst, signInEvery)}
}

// take spends an attempt of user from the client at addr (an address, or host:port
// whose port is not the client's) before its token is reviewed; false, with the wait
// until the next, when none is left. A success gives it back (refund), so that only
// failures count.
func (l *signInLimit) take(user, addr string) (bool, time.Duration) {
	pair, hasUser := user+"\x00"+hostOf(addr), user != ""
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	wait := l.byPair.wait(pair, now)
	if hasUser {
		wait = max(wait, l.byUser.wait(user, now))
	}
	if wait > 0 {
		return false, wait
	}
	l.byPair.spend(pair, now, -1)
	if hasUser {
		l.byUser.spend(user, now, -1)
	}
	return true, 0
}

// refund gives back the attempt of a sign-in that succeeded.
func (l *signInLimit) refund(user, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.byPair.spend(user+"\x00"+hostOf(addr), now, +1)
	if user != "" {
		l.byUser.spend(user, now, +1)
	}
}

// hostOf is the host of host:port, or the whole when it has no port.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// claimedUser is the user a token names, unverified: the subject of a JWT (service
// account and OIDC tokens), the ID of a bootstrap token (ID.SECRET); "" for other
// tokens, which are then counted per address alone. Only the TokenReview says whether
// the claim is true.
func claimedUser(token string) string {
	parts := strings.Split(token, ".")
	switch len(parts) {
	case 3:
		payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
		if err != nil {
			return ""
		}
		var claims struct {
			Sub string `json:"sub"`
		}
		if json.Unmarshal(payload, &claims) != nil || len(claims.Sub) > 256 {
			return ""
		}
		return claims.Sub
	case 2:
		if len(parts[0]) == 6 && len(parts[1]) == 16 {
			return "system:bootstrap:" + parts[0]
		}
	}
	return ""
}

// buckets is a token bucket per key, at most maxLimitedKeys of them.
type buckets struct {
	burst float64
	every time.Duration
	byKey map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newBuckets(burst int, every time.Duration) *buckets {
	return &buckets{burst: float64(burst), every: every, byKey: map[string]*bucket{}}
}

// level is what key's bucket holds at now; a key not remembered holds a full burst.
func (b *buckets) level(key string, now time.Time) float64 {
	k := b.byKey[key]
	if k == nil {
		return b.burst
	}
	return min(b.burst, k.tokens+float64(now.Sub(k.last))/float64(b.every))
}

// wait is the time until key has an attempt; 0 if it has one now.
func (b *buckets) wait(key string, now time.Time) time.Duration {
	if t := b.level(key, now); t < 1 {
		return time.Duration((1 - t) * float64(b.every))
	}
	return 0
}

// spend adds delta to key's bucket, within [0, burst]; a bucket full again is
// forgotten, as it holds nothing a new one would not.
func (b *buckets) spend(key string, now time.Time, delta float64) {
	t := min(b.burst, max(0, b.level(key, now)+delta))
	if t >= b.burst {
		delete(b.byKey, key)
		return
	}
	if b.byKey[key] == nil && len(b.byKey) >= maxLimitedKeys {
		b.makeRoom(now)
	}
	b.byKey[key] = &bucket{tokens: t, last: now}
}

// makeRoom forgets the buckets back to a full burst, or else the one left alone
// longest: a forgotten key gets its burst back early, which the other map of buckets
// still bounds, while memory stays bounded whatever keys clients invent.
func (b *buckets) makeRoom(now time.Time) {
	var oldest string
	for key, k := range b.byKey {
		if b.level(key, now) >= b.burst {
			delete(b.byKey, key)
		} else if oldest == "" || k.last.Before(b.byKey[oldest].last) {
			oldest = key
		}
	}
	if len(b.byKey) >= maxLimitedKeys {
		delete(b.byKey, oldest)
	}
}
