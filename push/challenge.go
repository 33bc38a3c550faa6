package push

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/version"
)

// An endpoint challenge proves, before a webhook's first delivery, that
// whoever registered it controls the receiver: the gateway POSTs
//
//	{"type": "a2a-gateway.endpoint_challenge", "challenge": "<random>"}
//
// (Content-Type application/json, with X-A2A-Notification-Token when the
// config has a token) and the receiver must answer 2xx with
// {"challenge": "<the same value>"}. A URL that merely accepts any POST
// (someone else's API) does not pass, so the relay cannot be used to send
// notifications at it.

// ChallengeType is the "type" of a challenge request body.
const ChallengeType = "a2a-gateway.endpoint_challenge"

// maxChallengeAnswer bounds the receiver's answer that is read.
const maxChallengeAnswer = 4 << 10

// ErrChallengeFailed wraps every reason an endpoint failed its challenge.
var ErrChallengeFailed = errors.New("the webhook did not answer the ownership challenge")

// ChallengeEndpoint sends one challenge to url with client (a URLPolicy
// client: the dial-time address check applies and redirects are not
// followed) and checks the echo. The error says why, fit for the tenant.
func ChallengeEndpoint(ctx context.Context, client *http.Client, url, token string) error {
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	want := base64.RawURLEncoding.EncodeToString(raw[:])
	body, _ := json.Marshal(map[string]string{"type": ChallengeType, "challenge": want})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrChallengeFailed, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", version.UserAgent())
	if token != "" {
		req.Header.Set(HeaderNotificationToken, token)
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *URLError
		if errors.As(err, &ue) {
			return fmt.Errorf("%w: %s", ErrChallengeFailed, ue.Error())
		}
		return fmt.Errorf("%w: no answer", ErrChallengeFailed)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: it answered HTTP %d", ErrChallengeFailed, resp.StatusCode)
	}
	var got struct {
		Challenge string `json:"challenge"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxChallengeAnswer)).Decode(&got); err != nil ||
		subtle.ConstantTimeCompare([]byte(got.Challenge), []byte(want)) != 1 {
		return fmt.Errorf("%w: the answer does not echo the challenge", ErrChallengeFailed)
	}
	return nil
}

// VerifiedEndpoints remembers, per tenant and URL, endpoints that passed a
// challenge, so that registering the same webhook again (a config per
// task) does not challenge it each time. Bounded; safe for concurrent use.
type VerifiedEndpoints struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[[2]string]time.Time
}

// NewVerifiedEndpoints remembers at most max endpoints for ttl each.
func NewVerifiedEndpoints(ttl time.Duration, max int) *VerifiedEndpoints {
	return &VerifiedEndpoints{ttl: ttl, max: max, m: map[[2]string]time.Time{}}
}

// Verified reports whether tenant's url passed a challenge within ttl.
func (v *VerifiedEndpoints) Verified(tenant, url string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	until, ok := v.m[[2]string{tenant, url}]
	return ok && now.Before(until)
}

// Add remembers that tenant's url passed a challenge at now. When full,
// expired entries go first, then everything (a cleared cache only costs
// challenges again).
func (v *VerifiedEndpoints) Add(tenant, url string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) >= v.max {
		for k, until := range v.m {
			if !now.Before(until) {
				delete(v.m, k)
			}
		}
		if len(v.m) >= v.max {
			clear(v.m)
		}
	}
	v.m[[2]string{tenant, url}] = now.Add(v.ttl)
}
