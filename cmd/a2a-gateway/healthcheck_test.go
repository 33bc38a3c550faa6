package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

// healthcheckConfig writes a configuration whose admin listener is at
// admin; the API key's variable is deliberately unset, since the
// healthcheck must not need the secrets.
func healthcheckConfig(t *testing.T, admin string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	cfg := `listen: "127.0.0.1:1"
admin_listen: "` + admin + `"
auth:
  api_keys:
    - name: probe
      tenant: t
      scopes: ["a2a:tasks.read"]
      key_env: A2AGW_HEALTHCHECK_TEST_UNSET
agents:
  - name: demo
    url: "http://127.0.0.1:1"
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHealthcheckAsksTheAdminListener(t *testing.T) {
	env := gwtest.Start(t)
	var out bytes.Buffer
	for _, path := range []string{"/readyz", "/healthz"} {
		out.Reset()
		if err := runHealthcheck(context.Background(), []string{"-config", healthcheckConfig(t, env.Config.AdminListen), "-path", path}, &out); err != nil {
			t.Fatalf("%s of a running gateway: %v", path, err)
		}
		if !strings.Contains(out.String(), path+": 200 OK") {
			t.Fatalf("output %q", out.String())
		}
	}
}

func TestHealthcheckFailsUnlessReady(t *testing.T) {
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(unready.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"not ready", []string{"-config", healthcheckConfig(t, unready.Listener.Addr().String())}, "503"},
		{"nothing listening", []string{"-config", healthcheckConfig(t, closedAddr)}, "connect"},
		{"missing configuration", []string{"-config", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml"},
		{"other path", []string{"-config", healthcheckConfig(t, unready.Listener.Addr().String()), "-path", "/metrics"}, "want /readyz or /healthz"},
		{"no timeout", []string{"-config", healthcheckConfig(t, unready.Listener.Addr().String()), "-timeout", "0s"}, "positive duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := runHealthcheck(context.Background(), c.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one mentioning %q", err, c.want)
			}
		})
	}
}

func TestAdminURL(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:9090":   "http://127.0.0.1:9090/readyz",
		":9090":          "http://127.0.0.1:9090/readyz",
		"[::]:9090":      "http://[::1]:9090/readyz",
		"10.0.0.7:9191":  "http://10.0.0.7:9191/readyz",
		"127.0.0.1:9090": "http://127.0.0.1:9090/readyz",
	} {
		got, err := adminURL(addr, "/readyz")
		if err != nil || got != want {
			t.Errorf("adminURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := adminURL("127.0.0.1:0", "/readyz"); err == nil {
		t.Error("a listener on port 0 has no address to ask")
	}
}
