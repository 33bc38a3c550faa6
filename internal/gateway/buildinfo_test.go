package gateway_test

import (
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

func TestBuildInfoGauge(t *testing.T) {
	env := gwtest.Start(t)
	resp, body := env.Do(t, http.MethodGet, env.Admin+"/metrics", "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	want := `a2agw_build_info{goversion="` + runtime.Version() + `",revision="unknown",version="dev"} 1`
	if !strings.Contains(string(body), want) {
		t.Fatalf("no %s in the metrics", want)
	}
}

// Profiles are served on the admin listener when asked for, and never on
// the public one.
func TestPprofOnlyOnAdminWhenEnabled(t *testing.T) {
	off := gwtest.Start(t)
	if resp, _ := off.Do(t, http.MethodGet, off.Admin+"/debug/pprof/", "", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("pprof off by default: admin answered %d", resp.StatusCode)
	}
	on := gwtest.Start(t, func(c *config.Config) { c.Pprof = true })
	resp, body := on.Do(t, http.MethodGet, on.Admin+"/debug/pprof/goroutine?debug=1", "", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("pprof on: admin answered %d", resp.StatusCode)
	}
	if resp, _ := on.Do(t, http.MethodGet, on.Gateway+"/debug/pprof/goroutine?debug=1", "", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("pprof on: the public listener answered %d", resp.StatusCode)
	}
}
