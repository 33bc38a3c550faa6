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
// caller's now.
type memChallenges struct {
	mu     sync.Mutex
	recs   *memRecords[TaskRef, *memChallenge]
	byID   map[string]TaskRef
	states map[string]memState
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

type memState struct {
	key   TaskRef
	until time.Time
}

func newMemChallenges(maxEntries int) *memChallenges {
	m := &memChallenges{
		recs: newMemRecords[TaskRef, *memChallenge](maxEntries),
		byID: map[string]TaskRef{}, states: map[string]memState{}, due: map[TaskRef]struct{}{},
	}
	m.recs.dropped = func(rec *memChallenge) {
		delete(m.due, rec.key)
		if m.byID[rec.c.ID] == rec.key {
			delete(m.byID, rec.c.ID)
		}
		if rec.stateDigest != "" {
			delete(m.states, rec.stateDigest)
		}
	}
	return m
}

// get returns the record of a task, unless it is past its retention at
// now; the zero now leaves retention to the sweep, for the calls that
// take no time. The caller holds mu.
func (m *memChallenges) get(k TaskRef, now time.Time) *memChallenge {
	rec, _ := m.recs.get(k, now)
	return rec
}

// copyChallenge keeps records from sharing slices with callers.
func copyChallenge(c Challenge) Challenge {
	c.Scopes = slices.Clone(c.Scopes)
	return c
}

// clearSecrets drops a record's credential and OAuth binding.
func (m *memChallenges) clearSecrets(rec *memChallenge) {
	rec.cred, rec.verifier = nil, nil
	if rec.stateDigest != "" {
		delete(m.states, rec.stateDigest)
		rec.stateDigest = ""
	}
}

func timedOut(c Challenge, now time.Time) bool {
	return c.Status == ChallengeExpired || ((c.Status == ChallengeOpen || c.Status == ChallengeCompleted) && !now.Before(c.Expires))
}

func (m *memChallenges) Open(_ context.Context, c Challenge, replace string, keep time.Duration) (Challenge, bool, error) {
	k := TaskRef{Agent: strings.Clone(c.Agent), TaskID: strings.Clone(c.TaskID)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec := m.get(k, c.Created); rec != nil {
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
	rec := m.byIDLocked(id, time.Time{})
	if rec == nil {
		return Challenge{}, false, nil
	}
	return copyChallenge(rec.c), true, nil
}

func (m *memChallenges) byIDLocked(id string, now time.Time) *memChallenge {
	k, ok := m.byID[id]
	if !ok {
		return nil
	}
	rec := m.get(k, now)
	if rec == nil || rec.c.ID != id {
		return nil
	}
	return rec
}

// openLocked returns the challenge id if it can still be completed: it
// exists, has not expired and is open.
func (m *memChallenges) openLocked(id string, now time.Time) (*memChallenge, error) {
	rec := m.byIDLocked(id, now)
	switch {
	case rec == nil:
		return nil, ErrChallengeNotFound
	case timedOut(rec.c, now):
		return nil, ErrChallengeExpired
	case rec.c.Status != ChallengeOpen:
		return nil, ErrChallengeState
	}
	return rec, nil
}

func (m *memChallenges) Current(_ context.Context, agent, taskID string) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.get(TaskRef{agent, taskID}, time.Time{})
	if rec == nil {
		return Challenge{}, false, nil
	}
	return copyChallenge(rec.c), true, nil
}

func (m *memChallenges) Complete(_ context.Context, id, method string, sealed []byte, ttl time.Duration, now time.Time) (Challenge, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, err := m.openLocked(id, now)
	if err != nil {
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
	rec, err := m.openLocked(id, now)
	if err != nil {
		return Challenge{}, err
	}
	m.clearSecrets(rec)
	rec.stateDigest, rec.verifier = strings.Clone(stateDigest), slices.Clone(sealedVerifier)
	m.states[rec.stateDigest] = memState{key: rec.key, until: rec.c.Expires}
	return copyChallenge(rec.c), nil
}

func (m *memChallenges) TakeOAuth(_ context.Context, stateDigest string, now time.Time) (Challenge, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[stateDigest]
	delete(m.states, stateDigest)
	// A state is kept until its challenge's expiry only to reclaim memory
	// (the sweep drops it, as Redis drops its key): past the expiry it
	// still finds the challenge, and reports it expired.
	if !ok {
		return Challenge{}, nil, ErrChallengeNotFound
	}
	rec := m.get(st.key, now)
	if rec == nil || rec.stateDigest != stateDigest {
		return Challenge{}, nil, ErrChallengeNotFound
	}
	verifier := rec.verifier
	rec.stateDigest, rec.verifier = "", nil
	switch {
	case timedOut(rec.c, now):
		return Challenge{}, nil, ErrChallengeExpired
	case rec.c.Status != ChallengeOpen:
		return Challenge{}, nil, ErrChallengeState
	}
	return copyChallenge(rec.c), verifier, nil
}

func (m *memChallenges) Use(_ context.Context, agent, taskID, id string, now time.Time) (Challenge, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.get(TaskRef{agent, taskID}, now)
	switch {
	case rec == nil || rec.c.ID != id:
		return Challenge{}, nil, ErrChallengeNotFound
	case timedOut(rec.c, now):
		return Challenge{}, nil, ErrChallengeExpired
	case rec.c.Status != ChallengeCompleted:
		return Challenge{}, nil, ErrChallengeState
	case rec.cred == nil || !now.Before(rec.credUntil):
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
	rec := m.get(TaskRef{agent, taskID}, now)
	if rec == nil || rec.c.ID != id {
		return Challenge{}, false, ErrChallengeNotFound
	}
	st := rec.c.Status
	lapsed := st == ChallengeCompleted && (rec.cred == nil || !now.Before(rec.credUntil))
	changed := false
	if (st == ChallengeOpen || st == ChallengeCompleted) && (!now.Before(rec.c.Expires) || lapsed) {
		m.clearSecrets(rec)
		rec.c.Status = ChallengeExpired
		changed = true
	}
	if !rec.c.Pending(now) {
		delete(m.due, rec.key)
	}
	return copyChallenge(rec.c), changed, nil
}

func (m *memChallenges) Close(_ context.Context, agent, taskID string) (Challenge, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.get(TaskRef{agent, taskID}, time.Time{})
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
		// Not get(k, now): now is how far ahead to look, not the clock,
		// so retention is left to the sweep.
		if rec := m.get(k, time.Time{}); rec != nil && !now.Before(rec.c.Expires) {
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
	for d, st := range m.states {
		if !now.Before(st.until) {
			delete(m.states, d)
		}
	}
}
