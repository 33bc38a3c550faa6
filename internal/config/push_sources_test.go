package config

import (
	"strings"
	"testing"
	"time"
)

// withAgentPush is minimal with a push section for its agent.
func withAgentPush(push string) string {
	return strings.Replace(minimal, `url: "http://127.0.0.1:9001"}`, `url: "http://127.0.0.1:9001", push: {`+push+`}}`, 1)
}

func TestPushSourceDefaults(t *testing.T) {
	cfg, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Agents[0].Push.PushSource
	if p.Source != PushSourceAuto || p.LeaseTTL.D() != DefaultPushLeaseTTL || p.ResubscribeMaxBackoff.D() != DefaultPushResubscribeMax ||
		p.MaxStreamFailures != DefaultPushMaxStreamFailures || p.PollInterval.D() != DefaultPushPollInterval ||
		p.ReconcileInterval.D() != DefaultPushReconcileInterval {
		t.Fatalf("defaults not applied: %+v", p)
	}
	cfg, err = Parse([]byte(withAgentPush(`source: stream, lease_ttl: 3s, poll_interval: 200ms, max_stream_failures: 2`)))
	if err != nil {
		t.Fatal(err)
	}
	p = cfg.Agents[0].Push.PushSource
	if p.Source != PushSourceStream || p.LeaseTTL.D() != 3*time.Second || p.PollInterval.D() != 200*time.Millisecond || p.MaxStreamFailures != 2 {
		t.Fatalf("not read as written: %+v", p)
	}
}

func TestPushSourceRejects(t *testing.T) {
	for _, tc := range []struct{ push, want string }{
		{`source: webhook`, `agents[0].push.source: want auto, native or stream`},
		{`lease_ttl: 10ms`, `agents[0].push.lease_ttl: must be at least`},
		{`max_stream_failures: 1000`, `agents[0].push.max_stream_failures: must be between 1 and 100`},
		{`poll_interval: 1ms`, `agents[0].push.poll_interval: must be at least`},
		{`reconcile_interval: 1ms`, `agents[0].push.reconcile_interval: must be at least`},
		{`sauce: stream`, `agents[0].push.sauce: unknown field; this section has forward_configs,`},
	} {
		t.Run(tc.push, func(t *testing.T) {
			_, err := Parse([]byte(withAgentPush(tc.push)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
