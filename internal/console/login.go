package console

import (
	"net/http"
	"strings"
	"time"
)

// maxTokenBytes bounds the token field of the sign-in form.
const maxTokenBytes = 16 << 10

// loginForm shows the sign-in form with a fresh CSRF token, bound to a
// short-lived signed cookie: a form posted from elsewhere cannot sign
// anyone in.
func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if _, err := c.readCookie(r, sessionCookie, kindSession); err == nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.showLogin(w, r, http.StatusOK, "")
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	exp := time.Now().Add(loginTTL)
	s := session{Kind: kindLogin, CSRF: newCSRF(), Expires: exp.Unix()}
	c.setCookie(w, r, loginCookie, c.sign.encode(s), exp)
	c.render(w, status, "login.html", view{Title: "Sign in", CSRF: s.CSRF, Flash: msg, Data: c.o.Authenticate != nil && c.o.Config.OpsScope != ""})
}

// login takes the ops token or a JWT with the ops scope from the form's
// body; neither ever appears in a URL or a log.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenBytes+4096)
	pre, err := c.readCookie(r, loginCookie, kindLogin)
	if err != nil || !csrfOK(pre, r) {
		c.o.Audit.Warn("console: sign-in refused: missing or wrong CSRF token", "remote", r.RemoteAddr)
		c.showLogin(w, r, http.StatusForbidden, "The sign-in form expired; try again.")
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	operator, ok := c.operator(r, tok)
	if !ok {
		c.o.Audit.Warn("console: sign-in refused", "remote", r.RemoteAddr)
		c.showLogin(w, r, http.StatusUnauthorized, "That token does not sign in to the console.")
		return
	}
	exp := time.Now().Add(c.o.Config.SessionTTL.D())
	s := session{Kind: kindSession, Operator: operator, CSRF: newCSRF(), Expires: exp.Unix()}
	c.setCookie(w, r, loginCookie, "", time.Time{})
	c.setCookie(w, r, sessionCookie, c.sign.encode(s), exp)
	c.o.Audit.Info("console: signed in", "operator", operator, "remote", r.RemoteAddr, "expires", exp.UTC())
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// operator names who tok signs in, if anyone: the ops token, or a JWT from
// a configured issuer carrying console.ops_scope.
func (c *Console) operator(r *http.Request, tok string) (string, bool) {
	if tok == "" || len(tok) > maxTokenBytes {
		return "", false
	}
	if c.checkOpsToken(tok) {
		return "ops-token", true
	}
	scope := c.o.Config.OpsScope
	if c.o.Authenticate == nil || scope == "" {
		return "", false
	}
	p, err := c.o.Authenticate(r.Context(), tok)
	if err != nil || !p.HasScope(scope) {
		return "", false
	}
	return p.Issuer + ":" + p.Subject, true
}

func (c *Console) logout(q *request) {
	c.setCookie(q.w, q.r, sessionCookie, "", time.Time{})
	c.o.Audit.Info("console: signed out", "operator", q.s.Operator)
	http.Redirect(q.w, q.r, Prefix+"login", http.StatusSeeOther)
}
