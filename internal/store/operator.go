package store

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// TaskAttempt is one delivery attempt of one of a task's notifications,
// with the receiver's answer, as the task's delivery log keeps it.
type TaskAttempt struct {
	// Endpoint and ID name the notification (see Delivery).
	Endpoint, ID string
	Attempt
}

// DeliveryLog keeps each task's recent delivery attempts, across its push
// configs, so that an operator can read what every receiver answered. The
// delivery queue's own attempt logs go with each delivery; this one stays
// with the task for TaskAttemptRetention after its last attempt.
type DeliveryLog interface {
	// Add appends a to the task's log, dropping the oldest entries beyond
	// MaxTaskAttempts. Err is cut to MaxAttemptErrBytes.
	Add(ctx context.Context, agent, taskID string, a TaskAttempt) error
	// List returns the task's log, oldest first; nil when it has none.
	List(ctx context.Context, agent, taskID string) ([]TaskAttempt, error)
}

// Limits and retention of the delivery log.
const (
	// MaxTaskAttempts bounds one task's delivery log.
	MaxTaskAttempts = 100
	// TaskAttemptRetention is how long a task's log is kept after its last
	// attempt.
	TaskAttemptRetention = 7 * 24 * time.Hour
)

// OperatorConcerns returns the delivery log of a store this package opened, and false for any other Store. Call it
// once per store and share what it returns: the embedded store's log lives
// in the value returned.
func OperatorConcerns(s Store) (DeliveryLog, bool) {
	switch s := s.(type) {
	case *memoryStore:
		return checkedDeliveryLog{&s.gate, newMemDeliveryLog(s.delivery.max)}, true
	case *redisStore:
		return checkedDeliveryLog{s.conn.gate, &redisDeliveryLog{conn: s.conn}}, true
	}
	return nil, false
}

// checkedDeliveryLog is the DeliveryLog OperatorConcerns hands out; see gate.
type checkedDeliveryLog struct {
	gate *gate
	b    DeliveryLog
}

func (c checkedDeliveryLog) Add(ctx context.Context, agent, taskID string, a TaskAttempt) error {
	if err := c.gate.check(checkTaskAttempt(agent, taskID, &a)); err != nil {
		return err
	}
	return c.b.Add(ctx, agent, taskID, a)
}

func (c checkedDeliveryLog) List(ctx context.Context, agent, taskID string) ([]TaskAttempt, error) {
	if err := c.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return nil, err
	}
	return c.b.List(ctx, agent, taskID)
}

func checkTaskAttempt(agent, taskID string, a *TaskAttempt) error {
	if err := cmp.Or(checkTaskRef(agent, taskID), checkDeliveryRef(a.Endpoint, a.ID)); err != nil {
		return err
	}
	if a.At.IsZero() {
		return fmt.Errorf("%w: an attempt without a time", ErrInvalidArgument)
	}
	a.Err = clipText(a.Err, MaxAttemptErrBytes)
	a.At, a.RetryAt = a.At.UTC(), a.RetryAt.UTC()
	return nil
}
