package flow

import (
	"reflect"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The requirement is read from every version's shape of an auth-required
// task or status update, and only what is well formed is kept.
func TestParseRequirement(t *testing.T) {
	full := requirement{Scheme: "oauth2", Scopes: []string{"calendar.read", "calendar.write"}, AuthorizationURL: "https://idp.example/authorize"}
	data := `{"scheme":"oauth2","scopes":["calendar.read","calendar.write"],"authorizationUrl":"https://idp.example/authorize"}`
	for _, tc := range []struct {
		name   string
		v      a2a.Version
		kind   a2a.EventKind
		result string
		want   requirement
	}{
		{"1.0 task", a2a.V10, a2a.EventTask,
			`{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"role":"ROLE_AGENT","parts":[{"text":"sign in"},{"data":` + data + `}]}}}}`, full},
		{"1.0 bare task (REST GetTask)", a2a.V10, a2a.EventTask,
			`{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"data":` + data + `}]}}}`, full},
		{"1.0 status update", a2a.V10, a2a.EventStatusUpdate,
			`{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"data":` + data + `}]}}}}`, full},
		{"0.3 task", a2a.V03, a2a.EventTask,
			`{"kind":"task","id":"t","status":{"state":"auth-required","message":{"kind":"message","parts":[{"kind":"text","text":"x"},{"kind":"data","data":` + data + `}]}}}`, full},
		{"0.3 status update", a2a.V03, a2a.EventStatusUpdate,
			`{"kind":"status-update","taskId":"t","final":true,"status":{"state":"auth-required","message":{"parts":[{"kind":"data","data":` + data + `}]}}}`, full},
		{"0.3 protobuf JSON", a2a.V03, a2a.EventTask,
			`{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"content":[{"data":{"data":` + data + `}}]}}}}`, full},
		{"metadata of the message", a2a.V10, a2a.EventTask,
			`{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"text":"x"}],"metadata":{"scheme":"bearer","scopes":"a b"}}}}}`,
			requirement{Scheme: "bearer", Scopes: []string{"a", "b"}}},
		{"snake_case URL, unsafe URL dropped", a2a.V10, a2a.EventTask,
			`{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"data":{"scheme":"x\u0000y","authorization_url":"javascript:alert(1)","scopes":["ok","has space",""]}}]}}}}`,
			requirement{Scopes: []string{"ok"}}},
		{"first data part naming a member wins", a2a.V10, a2a.EventTask,
			`{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED","message":{"parts":[{"data":{"other":1}},{"data":{"scheme":"apiKey"}},{"data":{"scheme":"later"}}]}}}}`,
			requirement{Scheme: "apiKey"}},
		{"no message", a2a.V10, a2a.EventTask, `{"task":{"id":"t","status":{"state":"TASK_STATE_AUTH_REQUIRED"}}}`, requirement{}},
		{"not JSON", a2a.V10, a2a.EventTask, `{"task":`, requirement{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseRequirement([]byte(tc.result), tc.v, tc.kind); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRequirementBounds(t *testing.T) {
	many := make([]string, 0, 40)
	for range 40 {
		many = append(many, `"s"`)
	}
	result := `{"task":{"id":"t","status":{"message":{"parts":[{"data":{"scheme":"` + strings.Repeat("x", maxSchemeBytes+1) +
		`","scopes":[` + strings.Join(many, ",") + `],"authorizationUrl":"https://a/` + strings.Repeat("p", maxURLBytes) + `"}}]}}}}`
	got := parseRequirement([]byte(result), a2a.V10, a2a.EventTask)
	if got.Scheme != "" || got.AuthorizationURL != "" || len(got.Scopes) != maxScopes {
		t.Fatalf("bounds not applied: scheme %d bytes, URL %d bytes, %d scopes", len(got.Scheme), len(got.AuthorizationURL), len(got.Scopes))
	}
}
