package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, token string, body []byte) int {
	t.Helper()
	h := http.Header{"Content-Type": {"application/a2a+json"}}
	if token != "" {
		h.Set("X-A2A-Notification-Token", token)
	}
	return postWith(t, url, h, body)
}

func postWith(t *testing.T, url string, h http.Header, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func deliveries(t *testing.T, url string) []Delivery {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	var body struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Deliveries
}

func TestReceiver(t *testing.T) {
	keys := newTestKeys(t, "k1")
	r := New()
	srv := httptest.NewServer(r)
	defer srv.Close()
	r.Trust(keys.url(), testIssuer)

	task := []byte(`{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	hookURL := srv.URL + "/hooks/h1"
	h := http.Header{
		"Content-Type":             {"application/a2a+json"},
		"X-A2A-Notification-Token": {"secret-1"},
		"Authorization":            {"Bearer " + signJWT(t, keys.get("k1"), "k1", gatewayClaims(hookURL, "n-1", "t1", task, time.Now()))},
	}
	if code := postWith(t, hookURL, h, task); code != http.StatusNoContent {
		t.Fatalf("valid notification: HTTP %d", code)
	}
	if code := post(t, hookURL, "", []byte(`garbage`)); code != http.StatusBadRequest {
		t.Fatalf("garbage: HTTP %d, want 400", code)
	}
	got := deliveries(t, srv.URL+"/deliveries/h1")
	if len(got) != 2 {
		t.Fatalf("deliveries %+v, want 2", got)
	}
	want := Delivery{
		TaskID: "t1", State: "completed", Kind: "task", Event: "task:completed",
		ContentType: "application/a2a+json", Token: "secret-1", ID: "n-1", Verified: true,
	}
	if got[0] != want {
		t.Errorf("first delivery %+v, want %+v", got[0], want)
	}
	if got[1].Error == "" {
		t.Errorf("the garbage delivery carries no error: %+v", got[1])
	}
	if other := deliveries(t, srv.URL+"/deliveries/h2"); len(other) != 0 {
		t.Errorf("an unused hook lists %+v", other)
	}
}

func TestReceiverBounds(t *testing.T) {
	srv := httptest.NewServer(New())
	defer srv.Close()

	tests := []struct {
		name string
		path string
		body []byte
		want int
	}{
		{"body over the limit", "/hooks/big", bytes.Repeat([]byte("x"), maxBodyBytes+1), http.StatusRequestEntityTooLarge},
		{"hook id over the limit", "/hooks/" + strings.Repeat("a", maxHookIDLength+1), []byte(`{}`), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := post(t, srv.URL+tt.path, "", tt.body); code != tt.want {
				t.Errorf("HTTP %d, want %d", code, tt.want)
			}
		})
	}

	r := New()
	for range maxPerHook + 5 {
		r.record("h", Delivery{TaskID: "t"})
	}
	if n := len(r.Deliveries("h")); n != maxPerHook {
		t.Errorf("kept %d deliveries on one hook, want %d", n, maxPerHook)
	}
	for i := range maxHooks + 1 {
		r.record(strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("z", i/26), Delivery{})
	}
	if n := len(r.hooks); n > maxHooks {
		t.Errorf("kept %d hooks, want at most %d", n, maxHooks)
	}
	if len(r.order) != len(r.hooks) {
		t.Errorf("eviction order tracks %d hooks, map has %d", len(r.order), len(r.hooks))
	}
}
