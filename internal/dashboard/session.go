package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// sessionCookie names the cookie that holds a session's id; the token stays on the
// server.
const sessionCookie = "tfk8s_dashboard_session"

// sessionLifetime is how long a sign-in lasts.
const sessionLifetime = 8 * time.Hour

// session is one signed-in user: their identity, their client, and the log streams
// they have open.
type session struct {
	user    string
	cluster Cluster
	// namespace is shown first: the user's ServiceAccount's, else the default.
	namespace string
	expires   time.Time

	mu      sync.Mutex
	streams int
}

// openStream counts a log stream against max; false if the session has max open.
func (s *session) openStream(max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams >= max {
		return false
	}
	s.streams++
	return true
}

func (s *session) closeStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streams--
}

// sessions are the in-cluster sessions, by random id.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

func newSessions() *sessions { return &sessions{byID: map[string]*session{}} }

// add stores a session and returns its new id: 32 random bytes.
func (ss *sessions) add(s *session) string {
	b := make([]byte, 32)
	rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, old := range ss.byID {
		if time.Now().After(old.expires) {
			delete(ss.byID, k)
		}
	}
	ss.byID[id] = s
	return id
}

// get returns the live session of id, nil if none.
func (ss *sessions) get(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.byID[id]
	if s == nil || time.Now().After(s.expires) {
		delete(ss.byID, id)
		return nil
	}
	return s
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byID, id)
}

// sessionHandler serves a request of a signed-in user.
type sessionHandler func(w http.ResponseWriter, r *http.Request, s *session)

// withSession finds the request's session: the one of local mode, else the one its
// cookie names. A name in the request that no object can have is 404 first. Without one, a page goes to the sign-in form and anything else
// gets 401.
func (s *Server) withSession(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkNames(r); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		if s.local != nil {
			h(w, r, s.local)
			return
		}
		if c, err := r.Cookie(sessionCookie); err == nil {
			if sess := s.sessions.get(c.Value); sess != nil {
				h(w, r, sess)
				return
			}
		}
		if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" && !strings.HasSuffix(r.URL.Path, "/stream") {
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", pageData{Title: "Sign in", InCluster: s.opts.InCluster, Page: map[string]any{"InCluster": s.opts.InCluster}})
}

// signIn checks the token with a TokenReview and, if the API server knows its user,
// starts a session whose every call uses that token. Failed attempts are limited per
// user and client address and per user (signInLimit), so that tokens cannot be
// guessed at the API server's pace, and one client behind a shared address holds back
// only the user it names.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if !s.opts.InCluster {
		http.Redirect(w, r, "/jobs", http.StatusSeeOther)
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	claimed := claimedUser(token)
	client := clientAddr(r, s.opts.TrustedProxies)
	if ok, wait := s.signIns.take(claimed, client); !ok {
		seconds := int(wait.Seconds()) + 1
		fmt.Fprintf(s.opts.Log, "dashboard: sign-in as %q refused from %s: too many failed attempts\n", claimed, client)
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		s.render(w, r, http.StatusTooManyRequests, "signin", pageData{Title: "Sign in", InCluster: true, Page: map[string]any{"InCluster": true,
			"Error": fmt.Sprintf("Too many failed sign-ins for this user: at most %d at once from one address (%d from all), then one every %v. Try again in %d s.",
				signInBurst, userBurst, signInEvery, seconds)}})
		return
	}
	user, err := s.reviewToken(r.Context(), token)
	if err != nil {
		fmt.Fprintf(s.opts.Log, "dashboard: sign-in refused from %s: %v\n", client, err)
		s.render(w, r, http.StatusUnauthorized, "signin", pageData{Title: "Sign in", InCluster: true,
			Page: map[string]any{"InCluster": true, "Error": "The API server did not accept this token."}})
		return
	}
	s.signIns.refund(claimed, client)
	ns := s.opts.Namespace
	if parts := strings.Split(user, ":"); len(parts) == 4 && parts[0] == "system" && parts[1] == "serviceaccount" {
		ns = parts[2]
	}
	c, err := s.opts.NewCluster(userConfig(s.opts.Config, token), ns)
	if err != nil {
		s.fail(w, r, fmt.Errorf("connecting as %s: %w", user, err))
		return
	}
	id := s.sessions.add(&session{user: user, cluster: c, namespace: ns, expires: time.Now().Add(sessionLifetime)})
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionLifetime.Seconds()),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
	fmt.Fprintf(s.opts.Log, "audit: user=%q action=signin result=ok\n", user)
	http.Redirect(w, r, "/jobs?namespace="+ns, http.StatusSeeOther)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// reviewToken asks the API server who token belongs to, with the dashboard's own
// identity (which may do nothing but TokenReview).
func (s *Server) reviewToken(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", errors.New("no token given")
	}
	kube, err := kubernetes.NewForConfig(s.opts.Config)
	if err != nil {
		return "", fmt.Errorf("connecting for a TokenReview: %w", err)
	}
	review, err := kube.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("reviewing the token: %w", err)
	}
	if !review.Status.Authenticated {
		return "", fmt.Errorf("token not authenticated: %s", review.Status.Error)
	}
	return review.Status.User.Username, nil
}

// userConfig is base with no credentials but the user's bearer token.
func userConfig(base *rest.Config, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = token
	return cfg
}
