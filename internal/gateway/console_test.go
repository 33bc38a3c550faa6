package gateway_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gwtest"
)

var consoleCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInToConsole posts token to the console's sign-in form in a fresh
// browser and returns the answer's status.
func signInToConsole(t *testing.T, admin, token string) int {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(admin + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := consoleCSRF.FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || m == nil || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("sign-in page: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = c.PostForm(admin+"/console/login", url.Values{"csrf": {string(m[1])}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestConsoleOnTheAdminListener(t *testing.T) {
	t.Setenv("A2AGW_TEST_OPS_TOKEN", "ops-token-for-the-console-test")
	t.Setenv("A2AGW_TEST_CONSOLE_KEY", "a console session key of at least 32 bytes")
	env := gwtest.Start(t, func(c *config.Config) {
		c.Lifecycle.OpsTokenEnv = "A2AGW_TEST_OPS_TOKEN"
		c.Console = config.ConsoleOptions{Enabled: true, SessionKeyEnv: "A2AGW_TEST_CONSOLE_KEY", OpsScope: "gateway:ops"}
	})
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"ops token", "ops-token-for-the-console-test", http.StatusSeeOther},
		{"JWT with the ops scope", env.Token(t, "ops", "carol", "gateway:ops"), http.StatusSeeOther},
		{"JWT without it", env.Token(t, "acme", "alice"), http.StatusUnauthorized},
		{"another token", "not-the-ops-token-at-all", http.StatusUnauthorized},
	} {
		if got := signInToConsole(t, env.Admin, tc.token); got != tc.want {
			t.Errorf("%s: sign-in answered %d, want %d", tc.name, got, tc.want)
		}
	}
	if resp, err := http.Get(env.Admin + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the admin listener's other endpoints: %v %v", resp, err)
	}
}

func TestConsoleOffUnlessEnabled(t *testing.T) {
	env := gwtest.Start(t)
	resp, err := http.Get(env.Admin + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/console/ without console.enabled: %d, want 404", resp.StatusCode)
	}
}
