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

// NegotiateVersion reads the A2A-Version header, falling back to the query
// parameter of the same name. A missing value means 0.3, as the 1.0
// specification requires. explicit reports whether the caller named a version.
func NegotiateVersion(r *http.Request) (v Version, explicit bool, err *Error) {
	raw := strings.TrimSpace(r.Header.Get(VersionHeader))
	if raw == "" {
		raw = strings.TrimSpace(r.URL.Query().Get(VersionHeader))
	}
	if raw == "" {
		return V03, false, nil
	}
	if v, ok := parseVersion(raw); ok {
		return v, true, nil
	}
	return 0, true, ErrVersionNotSupported.WithMessage("A2A version " + quoteClip(raw) + " is not supported; use 0.3 or 1.0")
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
