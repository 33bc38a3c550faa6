package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The streaming send with a push config the demo prints reaches the demo's
// receiver as notifications verified against the gateway's push JWKS, up
// to the terminal one; notifications the gateway did not sign are refused.
func TestDemoPushRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the demo")
	}
	pub, adm, hook := freePort(t), freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemoLogged(ctx, []string{"-listen", pub, "-admin", adm, "-webhook", hook, "-log-level", "info"}, &out, &logs)
	}()
	waitReady(t, adm)
	hookURL := "http://" + hook + demoWebhookPath
	banner := out.String()
	if !strings.Contains(banner, demoPushSend(hookURL)) {
		t.Fatalf("the demo did not print the send with a push config:\n%s", banner)
	}

	taskID, last := streamSend(t, "http://"+pub+"/agents/demo/message:stream", bannerToken(t, banner), demoPushSend(hookURL))
	deadline := time.Now().Add(30 * time.Second)
	for !hasLogLine(logs.String(), "signature ok", "task="+taskID, "event=status_update", "state=completed", "notification=") {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver logged no verified terminal notification for task %s:\n%s", taskID, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		kid  string
		key  ed25519.PrivateKey
	}{
		{"no JWT", "", nil},
		{"the published kid, another key", "push-key", otherKey},
		{"a kid that is not published", "other", otherKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, hookURL, bytes.NewReader(last))
			if err != nil {
				t.Fatal(err)
			}
			var forged string
			if tc.key != nil {
				forged = forgeNotificationJWT(t, tc.key, tc.kid, "http://"+pub, hookURL, taskID, last)
				req.Header.Set("Authorization", "Bearer "+forged)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("a notification the gateway did not sign got HTTP %d, want 401", resp.StatusCode)
			}
			if forged != "" && strings.Contains(logs.String(), forged) {
				t.Fatal("the receiver logged a notification token")
			}
		})
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// streamSend posts a streaming send and reads the stream to its end; it
// returns the task id and the last event, which must be the completed one.
func streamSend(t *testing.T, url, token, body string) (string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: HTTP %d", resp.StatusCode)
	}
	var taskID string
	var last []byte
	var lastEv a2a.Event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		last = []byte(strings.TrimSpace(data))
		if lastEv, err = a2a.ParseResult(last); err != nil {
			t.Fatalf("stream event %s: %v", last, err)
		}
		if taskID == "" {
			taskID = lastEv.TaskID
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if taskID == "" || lastEv.TaskID != taskID || lastEv.State != a2a.StateCompleted {
		t.Fatalf("the stream did not end with the task completed: task %q, last event %s", taskID, last)
	}
	return taskID, last
}

// forgeNotificationJWT signs a notification JWT for body the way the gateway
// does, with a key of the test's.
func forgeNotificationJWT(t *testing.T, key ed25519.PrivateKey, kid, issuer, audience, taskID string, body []byte) string {
	t.Helper()
	now := time.Now()
	sum := sha256.Sum256(body)
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": issuer, "aud": audience, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "forged-1",
		"taskId": taskID, "request_body_sha256": hex.EncodeToString(sum[:]),
	})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bannerToken is the development token the demo printed.
func bannerToken(t *testing.T, banner string) string {
	t.Helper()
	for line := range strings.Lines(banner) {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(line), "export TOKEN="); ok {
			return tok
		}
	}
	t.Fatalf("no token in the banner:\n%s", banner)
	return ""
}

// hasLogLine says whether one line of logs holds every one of parts.
func hasLogLine(logs string, parts ...string) bool {
	for line := range strings.Lines(logs) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

// syncBuffer is a buffer the demo's goroutines write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
