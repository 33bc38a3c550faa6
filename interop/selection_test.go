package interop

import (
	"testing"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/report"
)

var (
	testJS = report.SDK{Name: jsSDK, Version: "1.3.0"}
	testGo = report.SDK{Name: goSDK, Version: "v0.3.3"}
)

func peerByID(t *testing.T, peers []report.Peer, id string) report.Peer {
	t.Helper()
	for _, p := range peers {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no peer %s", id)
	return report.Peer{}
}

// TestMatrix: every client meets every agent, the required pairs
// among them, and only the pairs in one form go unbridged.
func TestMatrix(t *testing.T) {
	peers := matrixPeers(testJS, testGo)
	if len(peers) != 8 {
		t.Fatalf("%d peers, want 8: %v", len(peers), peers)
	}
	pairs := matrix(peers)
	seen := map[report.Pair]bool{}
	unbridged := 0
	for _, p := range pairs {
		seen[p] = true
		if !p.Bridged() {
			unbridged++
		}
	}
	if len(pairs) != 64 || len(seen) != 64 || unbridged != 12 {
		t.Fatalf("%d pairs (%d distinct), %d unbridged; want 64, 64, 12", len(pairs), len(seen), unbridged)
	}
	for _, want := range [][2]string{{"go03-jsonrpc", "js10-jsonrpc"}, {"go03-grpc", "js10-rest"}, {"js10-jsonrpc", "go03-jsonrpc"}, {"js10-grpc", "go03-grpc"}} {
		p := report.Pair{Client: peerByID(t, peers, want[0]), Agent: peerByID(t, peers, want[1])}
		if !seen[p] || !p.Bridged() {
			t.Errorf("the matrix lacks the bridged pair %s", p)
		}
	}
}

func TestSelection(t *testing.T) {
	peers := matrixPeers(testJS, testGo)
	pair := func(c, a string) report.Pair {
		return report.Pair{Client: peerByID(t, peers, c), Agent: peerByID(t, peers, a)}
	}
	s, err := parseSelection(" go03-*>js10-* , js10-jsonrpc>go03-grpc", "send, stream")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    report.Pair
		want bool
	}{
		{pair("go03-jsonrpc", "js10-rest"), true},
		{pair("go03-grpc", "js10-grpc"), true},
		{pair("go03-grpc", "js03-grpc"), false},
		{pair("js10-jsonrpc", "go03-grpc"), true},
		{pair("js10-jsonrpc", "go03-jsonrpc"), false},
	} {
		if got := s.pair(tt.p); got != tt.want {
			t.Errorf("%s selected: %v, want %v", tt.p, got, tt.want)
		}
	}
	for c, want := range map[report.Case]bool{report.Send: true, report.Stream: true, report.Card: true, report.Get: false} {
		if got := s.runs(c); got != want {
			t.Errorf("case %s runs: %v, want %v", c, got, want)
		}
	}
	if !s.filtered() {
		t.Error("a selection with filters says it is the whole matrix")
	}
	all, err := parseSelection("", "")
	if err != nil || all.filtered() || !all.pair(pair("js03-rest", "go03-grpc")) || !all.runs(report.Dedupe) {
		t.Errorf("no filters: %+v, %v", all, err)
	}
	for _, bad := range [][2]string{{"go03-jsonrpc", ""}, {"[>x", ""}, {"", "teleport"}} {
		if _, err := parseSelection(bad[0], bad[1]); err == nil {
			t.Errorf("parseSelection(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
