package flow

import (
	"net/http"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// The auth flow's errors, in the gateway's range of JSON-RPC codes (see
// package a2a). Their messages never carry a credential.
var (
	// ErrChallengeExpired refuses a message resuming a task whose auth
	// challenge expired, and a completion that came too late. The caller is
	// authenticated, so it is a 403 rather than a 401 (which would ask it
	// to authenticate to the gateway again, and which JSON-RPC answers would
	// carry as their HTTP status).
	ErrChallengeExpired = &a2a.Error{Code: -32059, Reason: "AUTH_CHALLENGE_EXPIRED", HTTPStatus: http.StatusForbidden,
		Message: "the task's auth challenge expired"}
	// errChallengeNotFound answers for an unknown challenge and for another
	// caller's, alike.
	errChallengeNotFound = &a2a.Error{Code: -32060, Reason: "AUTH_CHALLENGE_NOT_FOUND", HTTPStatus: http.StatusNotFound,
		Message: "auth challenge not found"}
	// errChallengeNotOpen refuses a second completion, or one of a used or
	// closed challenge.
	errChallengeNotOpen = &a2a.Error{Code: -32061, Reason: "AUTH_CHALLENGE_NOT_OPEN", HTTPStatus: http.StatusConflict,
		Message: "the auth challenge was already completed, used or closed"}
	// errBadState refuses an OAuth callback whose state is unknown, used,
	// replaced or altered: the four are not told apart.
	errBadState = a2a.ErrInvalidParams.WithMessage("the OAuth state is unknown or was already used")
	// errExchange means the authorization server did not turn the code into
	// a token; why goes to the log.
	errExchange = a2a.ErrUpstreamFailed.WithMessage("the authorization server did not issue a token; start the authorization again")
	// errNoOAuth refuses an OAuth start for an agent configured without one.
	errNoOAuth = a2a.ErrUnsupportedOperation.WithMessage("this agent's challenges are completed by handing over a credential; no OAuth flow is configured")
)
