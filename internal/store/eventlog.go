package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
)

// LoggedEvent is one event of a task's event log.
type LoggedEvent struct {
	// Seq numbers the task's events from 1, in the order they were logged.
	Seq int64
	// ID is the event's stable id (push.EventID).
	ID      string
	Payload []byte
	At      time.Time
}

// EventLog keeps, per task, the recent events the push relay saw, in order:
// the relay delivers them as notifications, and clients that reconnect to a
// stream are replayed what they missed. It also keeps the task's latest
// snapshot, which notifications in the 0.3 shape (always a full Task) need.
//
// Bounds: a task's log keeps its newest MaxEvents events and lives
// Retention after its last Record (EventLogOptions; Bounded changes them).
// An event that fell out of the log is forgotten with its id.
type EventLog interface {
	// After returns up to limit (1..MaxEventLogReadLimit) events logged
	// after the event with id (from the first when id is ""), oldest first;
	// found is false when id is not in the retained log.
	After(ctx context.Context, agent, taskID, id string, limit int) (events []LoggedEvent, found bool, err error)
	// Snapshot returns the task's latest snapshot and the sequence number of
	// the last event folded into it; ok is false when there is none.
	Snapshot(ctx context.Context, agent, taskID string) (seq int64, snapshot []byte, ok bool, err error)
	// SaveSnapshot stores snapshot as the task's latest, with the sequence
	// number of the last event folded into it, unless the stored one is at
	// that sequence number or later (a concurrent writer got further);
	// reports whether it stored it. It lives as long as the log.
	SaveSnapshot(ctx context.Context, agent, taskID string, seq int64, snapshot []byte) (bool, error)
	// Record logs payload as the task's next event unless an event with the
	// same id is logged already (Recorded says which, and the event's
	// sequence number: the earlier one for a duplicate) and, in the same
	// step (one round trip on Redis, where the keys share the task's hash
	// tag), reads the
	// task's push configs as PushConfigs.List does and, when live is
	// positive, marks the task live for that long (see Live). The push
	// relay publishes every event with it.
	Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error)
	// Live returns how long the task's live mark has left, zero when it has
	// none: a client's stream of the task was published from within that
	// time, so the relay's subscriber need not follow the task itself.
	Live(ctx context.Context, agent, taskID string) (time.Duration, error)
	// Bounded returns the same log with other bounds for what Record and
	// SaveSnapshot write; zero fields take the defaults.
	Bounded(o EventLogOptions) EventLog
}

// EventLogOptions bound every task's event log.
type EventLogOptions struct {
	// Retention is how long a task's log and snapshot are kept after the
	// last event was appended. Default 24h.
	Retention time.Duration
	// MaxEvents is how many events a task's log keeps; older ones go.
	// Default 1000.
	MaxEvents int
}

// Limits of the event-log concern; the defaults are the configuration's
// (config.DefaultEventLogRetention, config.DefaultEventLogMaxEvents).
const (
	// MaxEventLogEvents bounds MaxEvents.
	MaxEventLogEvents = 100_000
	// MaxEventLogRetention bounds Retention.
	MaxEventLogRetention = 30 * 24 * time.Hour
	// MaxEventPayloadBytes bounds one event's payload, and a snapshot.
	MaxEventPayloadBytes = 4 << 20
	// MaxEventLogReadLimit bounds the limit of After.
	MaxEventLogReadLimit = 1000
)

// Validate reports options out of range; field is their path in the
// configuration.
func (o EventLogOptions) Validate(field string) error {
	if o.Retention < 0 || o.Retention > MaxEventLogRetention {
		return fmt.Errorf("%s.retention: must be between 0 and %s", field, MaxEventLogRetention)
	}
	if o.MaxEvents < 0 || o.MaxEvents > MaxEventLogEvents {
		return fmt.Errorf("%s.max_events: must be between 0 and %d", field, MaxEventLogEvents)
	}
	return nil
}

// EventLogOptionsOf are the bounds the push section's event_log sets.
func EventLogOptionsOf(o config.PushEventLog) EventLogOptions {
	return EventLogOptions{Retention: o.Retention.D(), MaxEvents: o.MaxEvents}
}

// withDefaults fills zero fields and replaces values out of range.
func (o EventLogOptions) withDefaults() EventLogOptions {
	if o.Retention <= 0 || o.Retention > MaxEventLogRetention {
		o.Retention = config.DefaultEventLogRetention
	}
	if o.MaxEvents <= 0 || o.MaxEvents > MaxEventLogEvents {
		o.MaxEvents = config.DefaultEventLogMaxEvents
	}
	return o
}

func checkAppend(agent, taskID, id string, payload []byte, at time.Time) (time.Time, error) {
	if err := cmp.Or(checkTaskRef(agent, taskID), checkName("event id", id), checkPayloadSize("event payload", payload)); err != nil {
		return time.Time{}, err
	}
	if at.IsZero() {
		at = time.Now()
	}
	return nanoTime("event time", at)
}

func checkAfter(agent, taskID, id string, limit int) error {
	return cmp.Or(checkTaskRef(agent, taskID), checkOptionalName("event id", id), checkLimit(limit, MaxEventLogReadLimit))
}

func checkSnapshot(agent, taskID string, seq int64, snapshot []byte) error {
	if err := checkTaskRef(agent, taskID); err != nil {
		return err
	}
	if seq < 1 {
		return fmt.Errorf("%w: snapshot sequence number %d is not positive", ErrInvalidArgument, seq)
	}
	if len(snapshot) == 0 {
		return fmt.Errorf("%w: snapshot is empty", ErrInvalidArgument)
	}
	return checkPayloadSize("snapshot", snapshot)
}

// checkedEventLog is the EventLog a Store hands out: it refuses every call
// once the store is closed and checks the arguments before the back end,
// memory or Redis, sees them, so both refuse the same calls.
type checkedEventLog struct {
	gate *gate
	b    EventLog
}

func (c checkedEventLog) After(ctx context.Context, agent, taskID, id string, limit int) ([]LoggedEvent, bool, error) {
	if err := c.gate.check(checkAfter(agent, taskID, id, limit)); err != nil {
		return nil, false, err
	}
	return c.b.After(ctx, agent, taskID, id, limit)
}

func (c checkedEventLog) Snapshot(ctx context.Context, agent, taskID string) (int64, []byte, bool, error) {
	if err := c.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return 0, nil, false, err
	}
	return c.b.Snapshot(ctx, agent, taskID)
}

func (c checkedEventLog) SaveSnapshot(ctx context.Context, agent, taskID string, seq int64, snapshot []byte) (bool, error) {
	if err := c.gate.check(checkSnapshot(agent, taskID, seq, snapshot)); err != nil {
		return false, err
	}
	return c.b.SaveSnapshot(ctx, agent, taskID, seq, snapshot)
}

func (c checkedEventLog) Record(ctx context.Context, agent, taskID, id string, payload []byte, at time.Time, live time.Duration) (Recorded, error) {
	at, err := checkAppend(agent, taskID, id, payload, at)
	if err := c.gate.check(err, checkLive(live)); err != nil {
		return Recorded{}, err
	}
	return c.b.Record(ctx, agent, taskID, id, payload, at, live)
}

func (c checkedEventLog) Live(ctx context.Context, agent, taskID string) (time.Duration, error) {
	if err := c.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return 0, err
	}
	return c.b.Live(ctx, agent, taskID)
}

func (c checkedEventLog) Bounded(o EventLogOptions) EventLog {
	return checkedEventLog{c.gate, c.b.Bounded(o)}
}

func checkPayloadSize(what string, p []byte) error {
	if len(p) > MaxEventPayloadBytes {
		return fmt.Errorf("%w: %s is %d bytes, over the limit of %d", ErrInvalidArgument, what, len(p), MaxEventPayloadBytes)
	}
	return nil
}

// Recorded is what EventLog.Record did with an event.
type Recorded struct {
	// Seq is the event's sequence number (the earlier one for a
	// duplicate), Added whether it was logged now.
	Seq   int64
	Added bool
	// Configs are the task's push configs, oldest first, as they were when
	// the event was logged.
	Configs []PushConfig
	// Digest names Configs as stored, for RecordEnqueue; "" from a store
	// that has no RecordEnqueue.
	Digest string
}

// MaxLiveMark bounds the live argument of EventLog.Record: a mark is a
// short promise, renewed by every event of the stream that makes it.
const MaxLiveMark = time.Hour

func checkLive(live time.Duration) error {
	if live < 0 || live > MaxLiveMark {
		return fmt.Errorf("%w: live mark of %s is not between 0 and %s", ErrInvalidArgument, live, MaxLiveMark)
	}
	return nil
}

// liveMillis is a positive live mark in whole milliseconds, rounded up so
// that a mark under a millisecond still marks.
func liveMillis(live time.Duration) int64 {
	return int64((live + time.Millisecond - 1) / time.Millisecond)
}

// sortPushConfigs puts configs in List's order: oldest first, then by id.
func sortPushConfigs(cs []PushConfig) {
	slices.SortFunc(cs, func(a, b PushConfig) int { return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID)) })
}
