package a2a

import (
	"net/http"
	"strings"
)

// Version is a protocol dialect the gateway understands.
type Version int

const (
	// VLegacy is the pre-0.2 dialect (tasks/send, sessionId, client-chosen task ids).
	VLegacy Version = iota + 1
	// V03 is A2A 0.2/0.3 (message/send, kind discriminators, final flags).
	V03
	// V10 is A2A 1.0 (SendMessage, member-name discriminators, TASK_STATE_*).
	V10
)

// VersionHeader is the negotiation header (and query parameter) of A2A 1.0.
const VersionHeader = "A2A-Version"

func (v Version) String() string {
	switch v {
	case VLegacy:
		return "0.1"
	case V03:
		return "0.3"
	case V10:
		return "1.0"
	}
	return "unknown"
}

// NegotiateVersion reads the A2A-Version header, or else the query
// parameter of the same name. A missing value means 0.3, as the 1.0
// specification requires. explicit reports whether the caller named a
// version.
//
// The caller must name one version once: frameworks disagree on which of
// several values counts (the first, the last, the header or the query), so
// two header lines, a comma-separated list, two query parameters (in any
// letter case) or a header and a query parameter naming different versions
// are refused. The 1.0 specification defines the value as one "Major.Minor",
// so what is not one is answered VersionNotSupportedError.
func NegotiateVersion(r *http.Request) (v Version, explicit bool, err *Error) {
	var header, query []string
	for _, h := range r.Header.Values(VersionHeader) {
		if h = strings.TrimSpace(h); h != "" {
			header = append(header, h)
		}
	}
	for k, vs := range r.URL.Query() {
		if strings.EqualFold(k, VersionHeader) {
			query = append(query, vs...)
		}
	}
	if len(header) > 1 || len(query) > 1 || len(header) == 1 && strings.Contains(header[0], ",") {
		return 0, true, ErrVersionNotSupported.WithMessage("name one A2A version, once: the " + VersionHeader + " header or query parameter is given more than once")
	}
	var named []string
	if len(header) == 1 {
		named = header
	}
	if len(query) == 1 {
		if q := strings.TrimSpace(query[0]); q != "" {
			named = append(named, q)
		}
	}
	if len(named) == 0 {
		return V03, false, nil
	}
	for _, raw := range named {
		w, ok := parseVersion(raw)
		if !ok {
			return 0, true, ErrVersionNotSupported.WithMessage("A2A version " + quoteClip(raw) + " is not supported; use 0.3 or 1.0")
		}
		if v != 0 && w != v {
			return 0, true, ErrVersionNotSupported.WithMessage("the " + VersionHeader + " header and query parameter name different versions")
		}
		v = w
	}
	return v, true, nil
}

// parseVersion accepts "major.minor" with an optional patch ("1.0.1").
func parseVersion(s string) (Version, bool) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return 0, false
	}
	switch parts[0] + "." + parts[1] {
	case "1.0":
		return V10, true
	case "0.3", "0.2":
		return V03, true
	}
	return 0, false
}

// quoteClip quotes caller-supplied text for an error message, clipped so a
// hostile value cannot bloat the response or the log.
func quoteClip(s string) string {
	const max = 64
	if len(s) > max {
		s = s[:max] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

// NotificationTokenHeader carries a push config's token on every push
// notification (0.3 §9.5, 1.0 §6.6).
const NotificationTokenHeader = "X-A2A-Notification-Token"
