package goagent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/a2a-gateway/a2a-gateway/interop/internal/probe"
)

// hang only keeps a broken test from hanging.
const hang = 30 * time.Second

// start serves the agent on loopback and connects an a2a-go client to it
// directly, from its own card, over JSON-RPC.
func start(t *testing.T) (*a2aclient.Client, *probe.Client) {
	return startWith(t, a2a.TransportProtocolJSONRPC)
}

// startWith connects the client over the given transport.
func startWith(t *testing.T, transport a2a.TransportProtocol) (*a2aclient.Client, *probe.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent := New(base, transport, gln.Addr().String(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewUnstartedServer(agent.HTTP)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	if transport == a2a.TransportProtocolGRPC {
		go func() { _ = agent.GRPC.Serve(gln) }()
		t.Cleanup(agent.GRPC.Stop)
	} else {
		gln.Close()
	}

	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	card, err := agentcard.NewResolver(srv.Client()).Resolve(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	want := base + JSONRPCPath
	if transport == a2a.TransportProtocolGRPC {
		want = gln.Addr().String()
	}
	// The agent serves one interface, which its card names alone.
	if card.URL != want || card.PreferredTransport != transport || len(card.AdditionalInterfaces) != 1 || card.AdditionalInterfaces[0].URL != want {
		t.Fatalf("card advertises %s over %s, and %v", card.URL, card.PreferredTransport, card.AdditionalInterfaces)
	}
	client, err := a2aclient.NewFromCard(ctx, card,
		a2aclient.WithJSONRPCTransport(&http.Client{}),
		a2aclient.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{transport}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return client, probe.New(base, "http://127.0.0.1:1")
}

func text(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: s}) }

func describe(ev a2a.Event) string {
	switch v := ev.(type) {
	case *a2a.Task:
		return "task:" + string(v.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		return "status:" + string(v.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact:" + v.Artifact.Parts[0].(a2a.TextPart).Text
	default:
		return fmt.Sprintf("%T", ev)
	}
}

func send(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("got %T, want a task", res)
	}
	return task
}

func TestScenarios(t *testing.T) {
	client, pr := start(t)
	tests := []struct {
		text     string
		state    a2a.TaskState
		artifact string
	}{
		{"complete hello there", a2a.TaskStateCompleted, "echo: hello there"},
		{"", a2a.TaskStateCompleted, "echo: "},
		{"input", a2a.TaskStateInputRequired, ""},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			m := text(tt.text)
			task := send(t, ctx, client, m)
			if task.Status.State != tt.state {
				t.Fatalf("state %s, want %s", task.Status.State, tt.state)
			}
			if tt.artifact != "" && (len(task.Artifacts) != 1 || task.Artifacts[0].Parts[0].(a2a.TextPart).Text != tt.artifact) {
				t.Errorf("artifacts %+v, want %q", task.Artifacts, tt.artifact)
			}
			if n, err := pr.Executions(ctx, m.ID); err != nil || n != 1 {
				t.Errorf("executions %d, %v, want 1", n, err)
			}
		})
	}
}

func TestResumeAfterInput(t *testing.T) {
	client, _ := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	first := send(t, ctx, client, text("input"))
	second := send(t, ctx, client, a2a.NewMessageForTask(a2a.MessageRoleUser, first, a2a.TextPart{Text: "more"}))
	if second.ID != first.ID || second.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("resume answered %s in %s, want %s completed", second.ID, second.Status.State, first.ID)
	}
}

func TestStreamOrder(t *testing.T) {
	for _, transport := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolGRPC} {
		t.Run(string(transport), func(t *testing.T) {
			client, _ := startWith(t, transport)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			var got []string
			for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: text("stream 2")}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, describe(ev))
			}
			want := []string{"task:submitted", "status:working", "artifact:chunk 1", "artifact:chunk 2", "status:completed"}
			if !slices.Equal(got, want) {
				t.Fatalf("events %q, want %q", got, want)
			}
		})
	}
}

func TestHold(t *testing.T) {
	tests := []struct {
		name  string
		end   func(ctx context.Context, c *a2aclient.Client, pr *probe.Client, id a2a.TaskID) error
		final string
	}{
		{"released", func(ctx context.Context, _ *a2aclient.Client, pr *probe.Client, id a2a.TaskID) error {
			return pr.Release(ctx, string(id))
		}, "status:completed"},
		{"canceled", func(ctx context.Context, c *a2aclient.Client, _ *probe.Client, id a2a.TaskID) error {
			_, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: id})
			return err
		}, "status:canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, pr := start(t)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			var got []string
			var id a2a.TaskID
			for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: text("hold")}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, describe(ev))
				if id == "" {
					id = ev.TaskInfo().TaskID
				}
				if describe(ev) != "status:working" {
					continue
				}
				view, err := pr.Task(ctx, string(id))
				if err != nil || !view.Held || view.Subscriptions < 1 {
					t.Fatalf("probe while held: %+v, %v", view, err)
				}
				if err := tt.end(ctx, client, pr, id); err != nil {
					t.Fatal(err)
				}
			}
			if got[len(got)-1] != tt.final {
				t.Fatalf("events %q, want the last to be %s", got, tt.final)
			}
			if err := pr.Release(ctx, string(id)); err == nil {
				t.Error("a finished task could be released again")
			}
		})
	}
}

func TestPushURLsRecorded(t *testing.T) {
	client, pr := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	task := send(t, ctx, client, text("input"))
	const hook = "http://127.0.0.1:1/hooks/h"
	if _, err := client.SetTaskPushConfig(ctx, &a2a.TaskPushConfig{TaskID: task.ID, Config: a2a.PushConfig{URL: hook}}); err != nil {
		t.Fatal(err)
	}
	view, err := pr.Task(ctx, string(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(view.PushURLs, []string{hook}) {
		t.Errorf("push URLs %q, want %q", view.PushURLs, hook)
	}
}

func TestBounded(t *testing.T) {
	b := newBounded[int, int]()
	for i := range maxEntries + 10 {
		b.set(i, i)
	}
	if _, ok := b.get(0); ok {
		t.Error("the oldest key survived past the bound")
	}
	if v, ok := b.get(maxEntries + 9); !ok || v != maxEntries+9 {
		t.Errorf("the newest key: %d, %v", v, ok)
	}
	b.remove(maxEntries + 9)
	if _, ok := b.get(maxEntries + 9); ok || len(b.m) != len(b.order) {
		t.Errorf("remove left %d keys and %d in order", len(b.m), len(b.order))
	}
}

// TestOneBinding: an agent over gRPC serves no JSON-RPC, so the gateway
// must bridge a JSON-RPC caller to it.
func TestOneBinding(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	agent := New(base, a2a.TransportProtocolGRPC, "127.0.0.1:1", slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewUnstartedServer(agent.HTTP)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Post(base+JSONRPCPath, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("JSON-RPC on the gRPC agent answered %s, want 404", resp.Status)
	}
}
