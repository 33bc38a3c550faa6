package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Challenge statuses. A challenge is open until a credential arrives
// (completed), which is handed to the agent once (used); it expires when its
// time runs out first, and is closed when the task leaves auth-required.
const (
	ChallengeOpen      = "open"
	ChallengeCompleted = "completed"
	ChallengeUsed      = "used"
	ChallengeExpired   = "expired"
	ChallengeClosed    = "closed"
)

// Challenge is an auth-required task's request for a credential, bound to
// the task, its context, the tenant and subject that own it and its agent.
// Times come back in UTC with millisecond precision.
type Challenge struct {
	// ID is an unguessable random identifier chosen by the caller of Open.
	ID                       string
	Agent, TaskID, ContextID string
	Tenant, Subject          string
	// Version is the protocol version ("1.0", "0.3") of the exchange that
	// revealed the auth-required state: the shape of notifications about it.
	Version string
	// Scheme, Scopes and AuthorizationURL are what the agent asked for.
	Scheme           string
	Scopes           []string
	AuthorizationURL string
	// Status is one of the Challenge* statuses.
	Status string
	// Method says how the challenge was completed ("oauth", "direct").
	Method              string
	Created, Expires    time.Time
	CompletedAt, UsedAt time.Time
}

// Pending reports whether the challenge still waits for its credential or
// its resume: open or completed, and not past its expiry at now.
func (c Challenge) Pending(now time.Time) bool {
	return (c.Status == ChallengeOpen || c.Status == ChallengeCompleted) && now.Before(c.Expires)
}

// ChallengeRef names one challenge of one task.
type ChallengeRef struct {
	Agent, TaskID, ID string
}

var (
	// ErrChallengeNotFound means no such challenge: unknown, replaced by a
	// newer one for its task, or past its retention.
	ErrChallengeNotFound = errors.New("store: challenge not found")
	// ErrChallengeExpired means the challenge's time, or its credential's,
	// ran out.
	ErrChallengeExpired = errors.New("store: challenge expired")
	// ErrChallengeState means the challenge is not in the status the
	// operation needs: completed twice, used twice, closed.
	ErrChallengeState = errors.New("store: challenge not in the required status")
)

// Challenges keeps auth challenges, one current challenge per task, their
// sealed credentials and the OAuth states bound to them. Every transition
// is atomic, so a credential is stored once and handed out once however
// many replicas race. The store never sees a credential in the clear:
// callers seal it first. now is the caller's clock: expiry is decided by
// the gateway, Redis key lifetimes only reclaim memory.
type Challenges interface {
	// Open makes c (its Status ignored) the task's current challenge,
	// unless the task has one that is open, completed or expired: then that
	// one is returned and created is false. A current challenge whose id is
	// replace is replaced whatever its status, which is how a fresh
	// challenge follows an expired one. Records are kept until keep after
	// c.Expires.
	Open(ctx context.Context, c Challenge, replace string, keep time.Duration) (cur Challenge, created bool, err error)
	// Get returns the challenge with id while it is its task's current one.
	Get(ctx context.Context, id string) (Challenge, bool, error)
	// Current returns the task's current challenge.
	Current(ctx context.Context, agent, taskID string) (Challenge, bool, error)
	// Complete marks the open challenge id completed by method and keeps
	// the sealed credential for at most ttl, and never past the challenge's
	// expiry. ErrChallengeNotFound, ErrChallengeExpired, or
	// ErrChallengeState when it is not open (a second completion).
	Complete(ctx context.Context, id, method string, sealed []byte, ttl time.Duration, now time.Time) (Challenge, error)
	// BeginOAuth binds an OAuth state, by its digest, and the sealed PKCE
	// verifier to the open challenge id, replacing an earlier binding.
	BeginOAuth(ctx context.Context, id, stateDigest string, sealedVerifier []byte, now time.Time) (Challenge, error)
	// TakeOAuth consumes the binding of stateDigest, at most once: it
	// returns the challenge and the sealed verifier. ErrChallengeNotFound
	// for a state never bound, consumed or replaced.
	TakeOAuth(ctx context.Context, stateDigest string, now time.Time) (Challenge, []byte, error)
	// Use marks the task's completed challenge id used and returns its
	// sealed credential, deleting it: at most one call gets it.
	// ErrChallengeExpired when the challenge's or the credential's time ran
	// out (Expire then records it), ErrChallengeState when not completed.
	Use(ctx context.Context, agent, taskID, id string, now time.Time) (Challenge, []byte, error)
	// Expire marks the task's challenge id expired and deletes its
	// credential, if it is open or completed and its expiry has passed (or,
	// completed, its credential's). changed reports whether this call did.
	Expire(ctx context.Context, agent, taskID, id string, now time.Time) (c Challenge, changed bool, err error)
	// Close ends the task's current challenge because the task left
	// auth-required: it becomes closed and its credential is deleted. It
	// returns the challenge as it was; found is false when there was none
	// or it was closed already.
	Close(ctx context.Context, agent, taskID string) (before Challenge, found bool, err error)
	// Due lists up to limit challenges of agent still open or completed
	// whose expiry is at or before now, earliest first.
	Due(ctx context.Context, agent string, now time.Time, limit int) ([]ChallengeRef, error)
}

// Limits on Challenges arguments.
const (
	// MaxChallengeListLimit bounds the limit of one Due call.
	MaxChallengeListLimit = 1000
	// MaxSealedBytes bounds a sealed credential or verifier.
	MaxSealedBytes = 64 << 10
	// maxChallengeScopes and maxChallengeText bound what an agent's
	// requirement may put in a record.
	maxChallengeScopes = 64
	maxChallengeText   = 2048
)

// Challenge methods, for Challenge.Method.
const (
	MethodOAuth  = "oauth"
	MethodDirect = "direct"
)

func checkChallenge(c Challenge) error {
	if err := cmp.Or(checkName("challenge id", c.ID), checkTaskRef(c.Agent, c.TaskID), checkName("tenant", c.Tenant), checkName("subject", c.Subject)); err != nil {
		return err
	}
	if len(c.ContextID) > MaxNameBytes || len(c.Version) > 16 {
		return fmt.Errorf("%w: context id or version too long", ErrInvalidArgument)
	}
	if len(c.Scheme) > maxChallengeText || len(c.AuthorizationURL) > maxChallengeText || len(c.Scopes) > maxChallengeScopes {
		return fmt.Errorf("%w: requirement too large", ErrInvalidArgument)
	}
	for _, s := range c.Scopes {
		if s == "" || len(s) > maxChallengeText {
			return fmt.Errorf("%w: empty or oversized scope", ErrInvalidArgument)
		}
	}
	if c.Created.IsZero() || !c.Expires.After(c.Created) {
		return fmt.Errorf("%w: a challenge needs a creation time before its expiry", ErrInvalidArgument)
	}
	return nil
}

func checkSealed(what string, b []byte) error {
	if len(b) == 0 || len(b) > MaxSealedBytes {
		return fmt.Errorf("%w: %s must be 1 to %d bytes", ErrInvalidArgument, what, MaxSealedBytes)
	}
	return nil
}

func checkTaskChallenge(agent, taskID, id string) error {
	return cmp.Or(checkTaskRef(agent, taskID), checkName("challenge id", id))
}

// checkedChallenges is the Challenges a Store hands out; see gate.
type checkedChallenges struct {
	gate *gate
	b    Challenges
}

func (w checkedChallenges) Open(ctx context.Context, c Challenge, replace string, keep time.Duration) (Challenge, bool, error) {
	if err := w.gate.check(checkChallenge(c), checkPositive("keep", keep)); err != nil {
		return Challenge{}, false, err
	}
	return w.b.Open(ctx, c, replace, keep)
}

func (w checkedChallenges) Get(ctx context.Context, id string) (Challenge, bool, error) {
	if err := w.gate.check(checkName("challenge id", id)); err != nil {
		return Challenge{}, false, err
	}
	return w.b.Get(ctx, id)
}

func (w checkedChallenges) Current(ctx context.Context, agent, taskID string) (Challenge, bool, error) {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return Challenge{}, false, err
	}
	return w.b.Current(ctx, agent, taskID)
}

func (w checkedChallenges) Complete(ctx context.Context, id, method string, sealed []byte, ttl time.Duration, now time.Time) (Challenge, error) {
	if err := w.gate.check(checkName("method", method), checkSealed("credential", sealed), checkPositive("credential ttl", ttl)); err != nil {
		return Challenge{}, err
	}
	return w.b.Complete(ctx, id, method, sealed, ttl, now)
}

func (w checkedChallenges) BeginOAuth(ctx context.Context, id, stateDigest string, sealedVerifier []byte, now time.Time) (Challenge, error) {
	if err := w.gate.check(checkName("state digest", stateDigest), checkSealed("verifier", sealedVerifier)); err != nil {
		return Challenge{}, err
	}
	return w.b.BeginOAuth(ctx, id, stateDigest, sealedVerifier, now)
}

func (w checkedChallenges) TakeOAuth(ctx context.Context, stateDigest string, now time.Time) (Challenge, []byte, error) {
	if err := w.gate.check(checkName("state digest", stateDigest)); err != nil {
		return Challenge{}, nil, err
	}
	return w.b.TakeOAuth(ctx, stateDigest, now)
}

func (w checkedChallenges) Use(ctx context.Context, agent, taskID, id string, now time.Time) (Challenge, []byte, error) {
	if err := w.gate.check(checkTaskChallenge(agent, taskID, id)); err != nil {
		return Challenge{}, nil, err
	}
	return w.b.Use(ctx, agent, taskID, id, now)
}

func (w checkedChallenges) Expire(ctx context.Context, agent, taskID, id string, now time.Time) (Challenge, bool, error) {
	if err := w.gate.check(checkTaskChallenge(agent, taskID, id)); err != nil {
		return Challenge{}, false, err
	}
	return w.b.Expire(ctx, agent, taskID, id, now)
}

func (w checkedChallenges) Close(ctx context.Context, agent, taskID string) (Challenge, bool, error) {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return Challenge{}, false, err
	}
	return w.b.Close(ctx, agent, taskID)
}

func (w checkedChallenges) Due(ctx context.Context, agent string, now time.Time, limit int) ([]ChallengeRef, error) {
	if err := w.gate.check(checkName("agent name", agent), checkLimit(limit, MaxChallengeListLimit)); err != nil {
		return nil, err
	}
	return w.b.Due(ctx, agent, now, limit)
}
