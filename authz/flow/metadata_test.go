package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The challenge lands in the metadata of the task or status update of
// every answer shape, next to what was there, and nothing else changes.
func TestWithEventMetadata(t *testing.T) {
	view := map[string]any{"id": "ch-1"}
	for _, tc := range []struct {
		name    string
		payload string
		rpc     bool
		path    []string // to the object that gets the metadata
	}{
		{"jsonrpc 1.0 task", `{"jsonrpc":"2.0","id":7,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED"},"x-future":[1.50]}}}`, true, []string{"result", "task"}},
		{"jsonrpc 0.3 status update with metadata", `{"jsonrpc":"2.0","id":"a","result":{"kind":"status-update","taskId":"t","metadata":{"keep":true}}}`, true, []string{"result"}},
		{"rest 1.0 bare task", `{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED"},"metadata":null}`, false, nil},
		{"rest 1.0 stream status update", `{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED"}}}`, false, []string{"statusUpdate"}},
		{"legacy task", `{"jsonrpc":"2.0","id":1,"result":{"id":"t","sessionId":"s","status":{"state":"auth-required"}}}`, true, []string{"result"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := withEventMetadata([]byte(tc.payload), tc.rpc, ChallengeMetadataKey, view)
			if err != nil {
				t.Fatal(err)
			}
			var before, after map[string]any
			_ = json.Unmarshal([]byte(tc.payload), &before)
			if err := json.Unmarshal(out, &after); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			obj, orig := after, before
			for _, p := range tc.path {
				obj, _ = obj[p].(map[string]any)
				orig, _ = orig[p].(map[string]any)
			}
			md, _ := obj["metadata"].(map[string]any)
			if !reflect.DeepEqual(md[ChallengeMetadataKey], view) {
				t.Fatalf("no challenge in %s", out)
			}
			if old, ok := orig["metadata"].(map[string]any); ok && md["keep"] != old["keep"] {
				t.Fatalf("existing metadata lost: %s", out)
			}
			delete(obj, "metadata")
			delete(orig, "metadata")
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("other members changed:\n%s\n%s", tc.payload, out)
			}
			if bytes.Contains([]byte(tc.payload), []byte("1.50")) && !bytes.Contains(out, []byte("1.50")) {
				t.Fatalf("an unknown member lost its bytes: %s", out)
			}
		})
	}
	// Spliced in: a re-encoding would change the escapes, order and white
	// space around it.
	odd := `{ "result" : {"task":{"status":{"state":"TASK_STATE_AUTH_REQUIRED"},"id":"t\u0031","x":"a<b\/"}}, "jsonrpc":"2.0","id":1}`
	want := `{ "result" : {"task":{"status":{"state":"TASK_STATE_AUTH_REQUIRED"},"id":"t\u0031","x":"a<b\/","metadata":{"` + ChallengeMetadataKey + `":{"id":"ch-1"}}}}, "jsonrpc":"2.0","id":1}`
	if out, err := withEventMetadata([]byte(odd), true, ChallengeMetadataKey, view); err != nil || string(out) != want {
		t.Errorf("challenge not spliced in:\n got %s (%v)\nwant %s", out, err, want)
	}
	for _, bad := range []string{`[1,2]`, `{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, `{"jsonrpc":"2.0","id":1,"result":"x"}`} {
		if _, err := withEventMetadata([]byte(bad), true, ChallengeMetadataKey, view); !errors.Is(err, errNotObject) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestMessageMetadata(t *testing.T) {
	rpc := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","parts":[],"metadata":{"a":1}}}}`)
	rest := []byte(`{"message":{"messageId":"m","parts":[]},"configuration":{"blocking":true}}`)
	for _, tc := range []struct {
		name string
		body []byte
		rpc  bool
		msg  func(map[string]any) map[string]any
	}{
		{"jsonrpc", rpc, true, func(m map[string]any) map[string]any {
			return m["params"].(map[string]any)["message"].(map[string]any)
		}},
		{"rest", rest, false, func(m map[string]any) map[string]any { return m["message"].(map[string]any) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with, err := withMessageMetadata(tc.body, tc.rpc, CredentialMetadataKey, "Bearer x")
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.Unmarshal(with, &m)
			if md := tc.msg(m)["metadata"].(map[string]any); md[CredentialMetadataKey] != "Bearer x" {
				t.Fatalf("credential not added: %s", with)
			}
			without := withoutMessageMetadata(with, tc.rpc, CredentialMetadataKey)
			_ = json.Unmarshal(without, &m)
			if _, ok := tc.msg(m)["metadata"].(map[string]any)[CredentialMetadataKey]; ok {
				t.Fatalf("credential not removed: %s", without)
			}
			if same := withoutMessageMetadata(tc.body, tc.rpc, CredentialMetadataKey); !bytes.Equal(same, tc.body) {
				t.Fatalf("a body without the key changed: %s", same)
			}
		})
	}
	// Neither a JSON escape nor a second copy smuggles the key past the
	// removal, and the rest keeps its bytes.
	escaped := []byte(`{"message":{"messageId":"m","metadata":{"a2a-gateway\/credential":"Bearer forged", "keep" : "<1>","a2a-gateway/credential":"Bearer again"}}}`)
	want := `{"message":{"messageId":"m","metadata":{"keep" : "<1>"}}}`
	if out := withoutMessageMetadata(escaped, false, CredentialMetadataKey); string(out) != want {
		t.Fatalf("escaped and repeated key:\n got %s\nwant %s", out, want)
	}
}

// BenchmarkWithEventMetadata is the cost of adding the challenge to one
// auth-required answer, the only answers the flow rewrites.
func BenchmarkWithEventMetadata(b *testing.B) {
	payload := []byte(`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"4710a3c1-3bc8-4430-9a13-d0d8dc33b873","contextId":"29c016c4-abc3-48a5-923b-e8c1eeda404a",` +
		`"status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"role":"ROLE_AGENT","parts":[{"text":"Authorization required"},` +
		`{"data":{"scheme":"oauth2","scopes":["calendar.read"]}}]}},"artifacts":[],"history":[]}}}`)
	view := challengeView{ID: "o95NZFQG_nKx4h6bqPcrAm9KdUxbgEGaAoGMV8ddZWc", Status: "open", CompleteURL: "https://gw.example/auth/challenges/o95NZFQG_nKx4h6bqPcrAm9KdUxbgEGaAoGMV8ddZWc",
		Methods: []string{"direct"}, ExpiresAt: "2026-11-30T11:48:57Z", Scheme: "oauth2", Scopes: []string{"calendar.read"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := withEventMetadata(payload, true, ChallengeMetadataKey, view); err != nil {
			b.Fatal(err)
		}
	}
}
