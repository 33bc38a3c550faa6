package request

import "testing"

func TestHasScope(t *testing.T) {
	p := &Principal{Tenant: "acme", Subject: "alice", Scopes: []string{"tasks:read", "push"}}
	tests := []struct {
		scope string
		want  bool
	}{
		{"tasks:read", true},
		{"push", true},
		{"tasks", false},
		{"TASKS:READ", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := p.HasScope(tc.scope); got != tc.want {
			t.Errorf("HasScope(%q) = %v, want %v", tc.scope, got, tc.want)
		}
	}
	var none *Principal
	if none.HasScope("tasks:read") {
		t.Error("a nil principal has a scope")
	}
}
