package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// attempt is one sign-in: who claims to be whom from where, failing or not.
type attempt struct {
	after   time.Duration
	user    string
	addr    string
	succeed bool
}

// TestSignInLimit: failures count per (user, address) and per user across addresses,
// successes do not count, and time gives attempts back; with a fake clock.
func TestSignInLimit(t *testing.T) {
	repeat := func(n int, a attempt) []attempt {
		out := make([]attempt, n)
		for i := range out {
			out[i] = a
		}
		return out
	}
	fromAddrs := func(user string, addrs, each int) []attempt {
		var out []attempt
		for i := range addrs {
			out = append(out, repeat(each, attempt{user: user, addr: fmt.Sprintf("198.51.100.%d:1", i)})...)
		}
		return out
	}
	tests := []struct {
		name     string
		attempts []attempt
		last     attempt
		want     bool
	}{
		{name: "a burst of failures", attempts: repeat(signInBurst, attempt{user: "mallory", addr: "10.0.0.1:1"}),
			last: attempt{user: "mallory", addr: "10.0.0.1:2"}, want: false},
		{name: "another user at the same address", attempts: repeat(signInBurst, attempt{user: "mallory", addr: "10.0.0.1:1"}),
			last: attempt{user: "alice", addr: "10.0.0.1:1"}, want: true},
		{name: "no claimed user at the same address", attempts: repeat(signInBurst, attempt{user: "mallory", addr: "10.0.0.1:1"}),
			last: attempt{user: "", addr: "10.0.0.1:1"}, want: true},
		{name: "no claimed user: counted per address", attempts: repeat(signInBurst, attempt{addr: "10.0.0.1:1"}),
			last: attempt{addr: "10.0.0.1:9"}, want: false},
		{name: "no claimed user: not across addresses", attempts: fromAddrs("", userBurst, signInBurst-1),
			last: attempt{addr: "10.0.0.2:1"}, want: true},
		{name: "one user from many addresses", attempts: fromAddrs("alice", userBurst/(signInBurst-1), signInBurst-1),
			last: attempt{user: "alice", addr: "10.0.0.9:1"}, want: false},
		{name: "one user just under the cap across addresses", attempts: fromAddrs("alice", userBurst/(signInBurst-1), signInBurst-1)[1:],
			last: attempt{user: "alice", addr: "10.0.0.9:1"}, want: true},
		{name: "successes do not count", attempts: repeat(3*signInBurst, attempt{user: "alice", addr: "10.0.0.1:1", succeed: true}),
			last: attempt{user: "alice", addr: "10.0.0.1:1"}, want: true},
		{name: "one attempt back after signInEvery", attempts: repeat(signInBurst, attempt{user: "mallory", addr: "10.0.0.1:1"}),
			last: attempt{after: signInEvery, user: "mallory", addr: "10.0.0.1:1"}, want: true},
		{name: "not before", attempts: repeat(signInBurst, attempt{user: "mallory", addr: "10.0.0.1:1"}),
			last: attempt{after: signInEvery - time.Second, user: "mallory", addr: "10.0.0.1:1"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1e9, 0)
			l := newSignInLimit(func() time.Time { return now })
			for i, a := range tc.attempts {
				now = now.Add(a.after)
				if ok, _ := l.take(a.user, a.addr); !ok {
					t.Fatalf("attempt %d (%+v) refused", i, a)
				}
				if a.succeed {
					l.refund(a.user, a.addr)
				}
			}
			now = now.Add(tc.last.after)
			got, wait := l.take(tc.last.user, tc.last.addr)
			if got != tc.want {
				t.Errorf("last attempt allowed = %v, want %v", got, tc.want)
			}
			if !got && (wait <= 0 || wait > signInEvery) {
				t.Errorf("wait %v, want within (0, %v]", wait, signInEvery)
			}
		})
	}
}

// TestSignInLimitIsBounded: however many users and addresses clients invent, each map
// of buckets keeps at most maxLimitedKeys, and the most recent failures still count.
func TestSignInLimitIsBounded(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := newSignInLimit(func() time.Time { return now })
	for i := range maxLimitedKeys + 500 {
		now = now.Add(time.Millisecond)
		l.take(fmt.Sprintf("user-%d", i), fmt.Sprintf("203.0.113.%d:1", i%250))
	}
	if n, m := len(l.byPair.byKey), len(l.byUser.byKey); n > maxLimitedKeys || m > maxLimitedKeys {
		t.Errorf("%d pairs and %d users remembered, want at most %d each", n, m, maxLimitedKeys)
	}
	for i := range signInBurst {
		if ok, _ := l.take("mallory", "203.0.113.1:1"); !ok {
			t.Fatalf("failure %d of a fresh burst refused", i+1)
		}
	}
	if ok, _ := l.take("mallory", "203.0.113.1:1"); ok {
		t.Error("past a full map, a fresh burst of failures is not refused")
	}
}

func TestClaimedUser(t *testing.T) {
	tests := map[string]string{
		fakeJWT("system:serviceaccount:team:alice"): "system:serviceaccount:team:alice",
		"abcdef.0123456789abcdef":                   "system:bootstrap:abcdef",
		"opaque-static-token":                       "",
		"a.b.c":                                     "",
		"":                                          "",
	}
	got := map[string]string{}
	for token := range tests {
		got[token] = claimedUser(token)
	}
	if diff := cmp.Diff(tests, got); diff != "" {
		t.Errorf("claimedUser (-want +got):\n%s", diff)
	}
}
