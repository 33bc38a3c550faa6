package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// PushSource is how the gateway follows one watched task at its agent, as
// the replica holding the task's subscription lease records it: which
// replica held it last (a different one means the lease was taken over),
// and, when the agent pushes to the gateway natively, the digest of the
// per-task secret its notifications must carry. The secret itself is never
// stored.
type PushSource struct {
	Agent, TaskID string
	// Holder names the replica that last held the task's subscription.
	Holder string
	// SecretHash is the SHA-256 of the token the gateway registered with
	// its webhook at the agent; nil while none is registered.
	SecretHash []byte
}

// PushSources keeps a PushSource per watched task. Only the lease holder
// writes a task's record, so writes need no compare-and-set; any replica
// reads it (the inbound webhook checks the secret).
type PushSources interface {
	// Get returns the task's record; false when there is none.
	Get(ctx context.Context, agent, taskID string) (PushSource, bool, error)
	// Put stores s, replacing the task's record, for ttl.
	Put(ctx context.Context, s PushSource, ttl time.Duration) error
	// Delete removes the task's record; deleting none is harmless.
	Delete(ctx context.Context, agent, taskID string) error
}

// checkedPushSources is the PushSources a Store hands out; see gate.
type checkedPushSources struct {
	gate *gate
	b    PushSources
}

func (c checkedPushSources) Get(ctx context.Context, agent, taskID string) (PushSource, bool, error) {
	if err := c.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return PushSource{}, false, err
	}
	return c.b.Get(ctx, agent, taskID)
}

// Put hands the back end a copy of s that shares no memory with the
// caller's.
func (c checkedPushSources) Put(ctx context.Context, s PushSource, ttl time.Duration) error {
	s, err := checkPushSource(s, ttl)
	if err := c.gate.check(err); err != nil {
		return err
	}
	return c.b.Put(ctx, s, ttl)
}

func (c checkedPushSources) Delete(ctx context.Context, agent, taskID string) error {
	if err := c.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return err
	}
	return c.b.Delete(ctx, agent, taskID)
}

func checkPushSource(s PushSource, ttl time.Duration) (PushSource, error) {
	if err := cmp.Or(checkTaskRef(s.Agent, s.TaskID), checkName("holder", s.Holder), checkPositive("push source ttl", ttl)); err != nil {
		return PushSource{}, err
	}
	if s.SecretHash != nil && len(s.SecretHash) != sha256.Size {
		return PushSource{}, fmt.Errorf("%w: secret hash is %d bytes, not a SHA-256", ErrInvalidArgument, len(s.SecretHash))
	}
	s.Agent, s.TaskID, s.Holder = strings.Clone(s.Agent), strings.Clone(s.TaskID), strings.Clone(s.Holder)
	s.SecretHash = bytes.Clone(s.SecretHash)
	return s, nil
}
