package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memChallenges keeps each task's current challenge, with the same
// transitions as the Redis scripts under one mutex. Records are kept in
// creation order for the size bound; their lifetimes (like Redis key
// lifetimes) follow this process's clock, while expiry is decided by the
// caller's now. Lookups that take no now pass the zero time, which leaves
// retention to the sweep.
type memChallenges struct {
	mu   sync.Mutex
	recs *memRecords[TaskRef, *memChallenge]
	byID map[string]TaskRef
	// states maps an OAuth state digest to its task, until the challenge's
	// expiry.
	states *memRecords[string, TaskRef]
	// due holds the tasks whose challenge is open or completed.
	due map[TaskRef]struct{}
}

var _ Challenges = (*memChallenges)(nil)

type memChallenge struct {
	key         TaskRef
	c           Challenge
	cred        []byte
	credUntil   time.Time
	stateDigest string
	verifier    []byte
}

func newMemChallenges(maxEntries int) *memChallenges {
	m := &memChallenges{
		recs: newMemRecords[TaskRef, *memChallenge](maxEntries), byID: map[string]TaskRef{},
		states: newMemRecords[string, TaskRef](maxEntries), due: map[TaskRef]struct{}{},
	}
	m.recs.dropped = func(rec *memChallenge) {
		delete(m.due, rec.key)
		if m.byID[rec.c.ID] == rec.key {
			delete(m.byID, rec.c.ID)
		}
		m.states.remove(rec.stateDigest)
	}
	return m
}

// current returns the task's record while id is its challenge.
func (m *memChallenges) current(k TaskRef, id string, now time.Time) *memChallenge {
	if rec, _ := m.recs.get(k, now); rec != nil && rec.c.ID == id {
		return rec
	}
	return nil
}

// refusal is the error refusing a transition of rec that needs status
// want at now, or nil.
func refusal(rec *memChallenge, want string, now time.Time) error {
	switch {
	case rec == nil:
		return ErrChallengeNotFound
	case rec.c.Status == ChallengeExpired || (rec.c.Status == ChallengeOpen || rec.c.Status == ChallengeCompleted) && !now.Before(rec.c.Expires):
		return ErrChallengeExpired
	case rec.c.Status != want:
		return ErrChallengeState
	}
	return nil
}

// copyChallenge keeps records from sharing slices with callers.
func copyChallenge(c Challenge) Challenge {
	c.Scopes = slices.Clone(c.Scopes)
	return c
}

// clearSecrets drops a record's credential and OAuth binding.
func (m *memChallenges) clearSecrets(rec *memChallenge) {
	m.states.remove(rec.stateDigest)
	rec.cred, rec.verifier, rec.stateDigest = nil, nil, ""
}

func (m *memChallenges) Open(_ context.Context, c Challenge, replace string, keep time.Duration) (Challenge, bool, error) {
	k := TaskRef{Agent: strings.Clone(c.Agent), TaskID: strings.Clone(c.TaskID)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, _ := m.recs.get(k, c.Created); rec != nil {
		st := rec.c.Status
		if (st == ChallengeOpen || st == ChallengeCompleted || st == ChallengeExpired) && rec.c.ID != replace {
			return copyChallenge(rec.c), false, nil
		}
	}
	c = copyChallenge(c)
	c.Status, c.Method, c.CompletedAt, c.UsedAt = ChallengeOpen, "", time.Time{}, time.Time{}
	c.Created, c.Expires = c.Created.Truncate(time.Millisecond).UTC(), c.Expires.Truncate(time.Millisecond).UTC()
	m.recs.put(k, &memChallenge{key: k, c: c}, c.Expires.Add(keep))
	m.byID[c.ID] = k
	m.due[k] = struct{}{}
	return copyChallenge(c), true, nil
}

func (m *memChallenges) Get(_ context.Context, id string) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.current(m.byID[id], id, time.Time{})
	if rec == nil {
		return Challenge{}, false, nil
	}
	return copyChallenge(rec.c), true, nil
}

func (m *memChallenges) Current(_ context.Context, agent, taskID string) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs.get(TaskRef{agent, taskID}, time.Time{})
	if !ok {
		return Challenge{}, false, nil
	}
	return copyChallenge(rec.c), true, nil
}

func (m *memChallenges) Complete(_ context.Context, id, method string, sealed []byte, ttl time.Duration, now time.Time) (Challenge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.current(m.byID[id], id, now)
	if err := refusal(rec, ChallengeOpen, now); err != nil {
		return Challenge{}, err
	}
	m.clearSecrets(rec)
	rec.cred = slices.Clone(sealed)
	rec.credUntil = now.Add(min(ttl, rec.c.Expires.Sub(now)))
	rec.c.Status, rec.c.Method, rec.c.CompletedAt = ChallengeCompleted, strings.Clone(method), now.Truncate(time.Millisecond).UTC()
	return copyChallenge(rec.c), nil
}

func (m *memChallenges) BeginOAuth(_ context.Context, id, stateDigest string, sealedVerifier []byte, now time.Time) (Challenge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.current(m.byID[id], id, now)
	if err := refusal(rec, ChallengeOpen, now); err != nil {
		return Challenge{}, err
	}
	m.clearSecrets(rec)
	rec.stateDigest, rec.verifier = strings.Clone(stateDigest), slices.Clone(sealedVerifier)
	m.states.put(rec.stateDigest, rec.key, rec.c.Expires)
	return copyChallenge(rec.c), nil
}

func (m *memChallenges) TakeOAuth(_ context.Context, stateDigest string, now time.Time) (Challenge, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A state is kept until its challenge's expiry only to reclaim memory
	// (the sweep drops it, as Redis drops its key): past the expiry it
	// still finds the challenge, and reports it expired.
	k, ok := m.states.get(stateDigest, time.Time{})
	m.states.remove(stateDigest)
	rec, _ := m.recs.get(k, now)
	if !ok || rec == nil || rec.stateDigest != stateDigest {
		return Challenge{}, nil, ErrChallengeNotFound
	}
	verifier := rec.verifier
	rec.stateDigest, rec.verifier = "", nil
	if err := refusal(rec, ChallengeOpen, now); err != nil {
		return Challenge{}, nil, err
	}
	return copyChallenge(rec.c), verifier, nil
}

func (m *memChallenges) Use(_ context.Context, agent, taskID, id string, now time.Time) (Challenge, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.current(TaskRef{agent, taskID}, id, now)
	if err := refusal(rec, ChallengeCompleted, now); err != nil {
		return Challenge{}, nil, err
	}
	if rec.cred == nil || !now.Before(rec.credUntil) {
		return Challenge{}, nil, ErrChallengeExpired
	}
	cred := rec.cred
	rec.cred = nil
	rec.c.Status, rec.c.UsedAt = ChallengeUsed, now.Truncate(time.Millisecond).UTC()
	delete(m.due, rec.key)
	return copyChallenge(rec.c), cred, nil
}

func (m *memChallenges) Expire(_ context.Context, agent, taskID, id string, now time.Time) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.current(TaskRef{agent, taskID}, id, now)
	if rec == nil {
		return Challenge{}, false, ErrChallengeNotFound
	}
	st := rec.c.Status
	lapsed := st == ChallengeCompleted && (rec.cred == nil || !now.Before(rec.credUntil))
	changed := (st == ChallengeOpen || st == ChallengeCompleted) && (!now.Before(rec.c.Expires) || lapsed)
	if changed {
		m.clearSecrets(rec)
		rec.c.Status = ChallengeExpired
	}
	if !rec.c.Pending(now) {
		delete(m.due, rec.key)
	}
	return copyChallenge(rec.c), changed, nil
}

func (m *memChallenges) Close(_ context.Context, agent, taskID string) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, _ := m.recs.get(TaskRef{agent, taskID}, time.Time{})
	if rec == nil || rec.c.Status == ChallengeClosed {
		return Challenge{}, false, nil
	}
	before := copyChallenge(rec.c)
	m.clearSecrets(rec)
	rec.c.Status = ChallengeClosed
	delete(m.due, rec.key)
	return before, true, nil
}

func (m *memChallenges) Due(_ context.Context, agent string, now time.Time, limit int) ([]ChallengeRef, error) {
	m.mu.Lock()
	var due []Challenge
	for k := range m.due {
		if k.Agent != agent {
			continue
		}
		// The zero time, not now: now is how far ahead to look, not the
		// clock, so retention is left to the sweep.
		if rec, _ := m.recs.get(k, time.Time{}); rec != nil && !now.Before(rec.c.Expires) {
			due = append(due, rec.c)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(due, func(a, b Challenge) int { return a.Expires.Compare(b.Expires) })
	out := make([]ChallengeRef, 0, min(limit, len(due)))
	for _, c := range due[:min(limit, len(due))] {
		out = append(out, ChallengeRef{Agent: c.Agent, TaskID: c.TaskID, ID: c.ID})
	}
	return out, nil
}

// sweep drops records past their retention and OAuth states past their
// challenge's expiry.
func (m *memChallenges) sweep(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs.sweep(now)
	m.states.sweep(now)
}
