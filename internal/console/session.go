package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// A session is a signed cookie, so that any replica holding the same key
// accepts it and none keeps state: the operator's name, when it expires,
// and the CSRF token every form of the session must carry back.
type session struct {
	Operator string `json:"op"`
	Expires  int64  `json:"exp"`
	CSRF     string `json:"csrf"`
	// Kind separates the session cookie from the sign-in form's cookie, so
	// one cannot stand for the other.
	Kind string `json:"k"`
}

const (
	kindSession = "s"
	kindLogin   = "l"
	// loginTTL bounds how long a sign-in form may be submitted.
	loginTTL = 10 * time.Minute
	// maxCookieBytes bounds a cookie the console reads.
	maxCookieBytes = 2048
)

var errBadSession = errors.New("console: no valid session")

// signer signs and checks cookies with HMAC-SHA256.
type signer struct {
	key []byte
}

// domain separation: a console cookie's MAC is never a valid MAC of any
// other use of the key.
const macContext = "a2a-gateway console cookie v1\x00"

func (s signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(macContext))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

func (s signer) encode(v session) string {
	b, _ := json.Marshal(v)
	p := base64.RawURLEncoding.EncodeToString(b)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s signer) decode(raw, kind string, now time.Time) (session, error) {
	if len(raw) > maxCookieBytes {
		return session{}, errBadSession
	}
	p, sig, ok := strings.Cut(raw, ".")
	if !ok {
		return session{}, errBadSession
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return session{}, errBadSession
	}
	b, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return session{}, errBadSession
	}
	var v session
	if err := json.Unmarshal(b, &v); err != nil || v.Kind != kind || v.CSRF == "" || now.Unix() >= v.Expires {
		return session{}, errBadSession
	}
	return v, nil
}

func newCSRF() string { return rand.Text() }

// csrfOK compares the form's token with the session's in constant time.
func csrfOK(s session, r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// isSecure reports whether cookies must be Secure: the request came over
// TLS, or the gateway is published on https (TLS ends in front of it).
func (c *Console) isSecure(r *http.Request) bool { return c.secure || r.TLS != nil }

// cookieNames are the session and sign-in cookies' names: with the
// __Host- prefix when Secure, which pins them to this host and path /.
func (c *Console) cookieName(r *http.Request, base string) string {
	if c.isSecure(r) {
		return "__Host-" + base
	}
	return base
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, base, value string, expires time.Time) {
	ck := &http.Cookie{
		Name: c.cookieName(r, base), Value: value, Path: "/",
		HttpOnly: true, Secure: c.isSecure(r), SameSite: http.SameSiteStrictMode,
	}
	if value == "" {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
		ck.MaxAge = int(time.Until(expires).Seconds())
	}
	http.SetCookie(w, ck)
}

func (c *Console) readCookie(r *http.Request, base, kind string) (session, error) {
	ck, err := r.Cookie(c.cookieName(r, base))
	if err != nil {
		return session{}, errBadSession
	}
	return c.sign.decode(ck.Value, kind, time.Now())
}

const (
	sessionCookie = "a2agw-console"
	loginCookie   = "a2agw-console-login"
)
