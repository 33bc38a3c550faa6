package push

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestChallengeEndpoint(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Type, Challenge string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Type != ChallengeType || r.Header.Get(HeaderNotificationToken) != "tok" {
			http.Error(w, "bad challenge", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": in.Challenge})
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string // "" for success
	}{
		{"echo", echo, ""},
		{"accepts anything", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }, "does not echo"},
		{"wrong echo", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"challenge":"nope"}`) }, "does not echo"},
		{"error status", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, "HTTP 500"},
		{"redirect to an echo", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
		}, "HTTP 307"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("/hook", tc.handler)
			mux.HandleFunc("/echo", echo)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			pol, err := NewURLPolicy(Allowlist{"127.0.0.1/32:*"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = ChallengeEndpoint(context.Background(), pol.Client(time.Second), srv.URL+"/hook", "tok")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrChallengeFailed) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a challenge failure saying %q", err, tc.want)
			}
		})
	}
}

// The dial-time policy applies to the challenge too: a receiver on a
// forbidden address is not called.
func TestChallengeEndpointRefusedAddress(t *testing.T) {
	called := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	defer srv.Close()
	pol, err := NewURLPolicy(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = ChallengeEndpoint(context.Background(), pol.Client(time.Second), srv.URL, "")
	if !errors.Is(err, ErrChallengeFailed) || called {
		t.Fatalf("got %v (receiver called: %v)", err, called)
	}
}

func TestVerifiedEndpoints(t *testing.T) {
	v := NewVerifiedEndpoints(time.Minute, 2)
	now := time.Now()
	v.Add("acme", "https://a", now)
	if !v.Verified("acme", "https://a", now) || v.Verified("globex", "https://a", now) || v.Verified("acme", "https://a", now.Add(time.Minute)) {
		t.Fatal("verified endpoints are per tenant and expire")
	}
	v.Add("acme", "https://b", now)
	v.Add("acme", "https://c", now) // full: cleared, then added
	if !v.Verified("acme", "https://c", now) || len(v.m) > 2 {
		t.Fatalf("bounded cache holds %d", len(v.m))
	}
}
