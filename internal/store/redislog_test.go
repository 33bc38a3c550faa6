package store

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// go-redis's messages arrive as JSON lines of the gateway's log.
func TestRedisLogIsStructured(t *testing.T) {
	var buf bytes.Buffer
	redisLogger{slog.New(slog.NewJSONHandler(&buf, nil))}.Printf(context.Background(), "redis: discarding bad PubSub connection: %v", "EOF")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not a JSON line: %q", buf.String())
	}
	if line["msg"] != "redis: discarding bad PubSub connection: EOF" || line["log"] != "redis" || line["level"] != "WARN" {
		t.Fatalf("line: %v", line)
	}
}
