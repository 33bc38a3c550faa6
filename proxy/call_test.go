package proxy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

func TestCallAgent(t *testing.T) {
	env := gwtest.Start(t)
	tok := env.Token(t, "acme", "alice")
	_, body := env.Do(t, "POST", env.AgentBase+"/message:send", tok, "1.0",
		[]byte(`{"message":{"messageId":"call-1","role":"ROLE_USER","parts":[{"text":"wait"}]},"configuration":{"returnImmediately":true}}`))
	ev, err := a2a.ParseResult(body)
	if err != nil || ev.TaskID == "" {
		t.Fatalf("no task: %s", body)
	}
	px := env.GW.Proxy()
	for _, v := range []a2a.Version{a2a.V10, a2a.V03} {
		res, err := px.Call(context.Background(), "demo", v, a2a.MethodGetTask, a2a.TaskParams{ID: ev.TaskID})
		if err != nil {
			t.Fatalf("%v get: %v", v, err)
		}
		got, err := a2a.ParseResult(res)
		if err != nil || got.TaskID != ev.TaskID || got.State != a2a.StateWorking {
			t.Fatalf("%v get: %+v %v", v, got, err)
		}
	}
	res, err := px.Call(context.Background(), "demo", a2a.V10, a2a.MethodCancelTask, a2a.TaskParams{ID: ev.TaskID})
	if got, _ := a2a.ParseResult(res); err != nil || got.State != a2a.StateCanceled {
		t.Fatalf("cancel: %s %v", res, err)
	}
	_, err = px.Call(context.Background(), "demo", a2a.V10, a2a.MethodCancelTask, a2a.TaskParams{ID: ev.TaskID})
	var ae *a2a.Error
	if !errors.As(err, &ae) || ae.Code != a2a.ErrTaskNotCancelable.Code {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := px.Call(context.Background(), "nope", a2a.V10, a2a.MethodGetTask, a2a.TaskParams{ID: "x"}); err == nil {
		t.Fatal("unknown agent accepted")
	}
}
