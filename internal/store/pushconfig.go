package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/a2a"
)

// PushConfig is a push-notification config a client registered for one task
// of one agent, through the gateway.
type PushConfig struct {
	// ID is the config id (client-chosen or generated), unique per task.
	Agent, TaskID, ID string
	// Tenant and Subject are the owner, for authorization and audit.
	Tenant, Subject string
	// Version is the protocol version the consumer registered with: it
	// decides the shape of the notifications' payload.
	Version a2a.Version
	// URL is the webhook; Token goes in X-A2A-Notification-Token.
	URL, Token string
	// AuthScheme and AuthCredentials become "Authorization: <scheme>
	// <credentials>" on every notification.
	AuthScheme, AuthCredentials string
	// Created is when the config was first registered.
	Created time.Time
}

// TaskRef names one task of one agent.
type TaskRef struct{ Agent, TaskID string }

// PushConfigs keeps the push configs of each task, and the watched index:
// the tasks with push configs whose terminal notification is not yet
// enqueued, which the upstream subscribers work through.
type PushConfigs interface {
	// Put stores c, replacing a config with the same id, and adds the task
	// to the watched index (keeping its first registration time); created
	// reports whether the id was new. It fails with ErrTooManyPushConfigs
	// when the task already holds MaxPushConfigsPerTask other configs.
	Put(ctx context.Context, c PushConfig) (created bool, err error)
	// Get returns one config; false when the task has no config of that id.
	Get(ctx context.Context, agent, taskID, id string) (PushConfig, bool, error)
	// List returns the task's configs, oldest first.
	List(ctx context.Context, agent, taskID string) ([]PushConfig, error)
	// Delete removes one config; reports whether it existed. The task stays
	// in the watched index: a subscriber that finds no config left calls
	// Finish.
	Delete(ctx context.Context, agent, taskID, id string) (bool, error)
	// Watched lists up to limit (1..MaxWatchedListLimit) tasks with push
	// configs whose terminal notification is not yet enqueued, oldest
	// registration first.
	Watched(ctx context.Context, limit int) ([]TaskRef, error)
	// Finish takes the task out of the watched index (its terminal or
	// orphan notification is enqueued). Finishing a task not watched is
	// harmless.
	Finish(ctx context.Context, agent, taskID string) error
}

// Limits and retention of the push-config concern.
const (
	// MaxPushConfigsPerTask bounds the configs of one task: each one costs
	// a delivery per event.
	MaxPushConfigsPerTask = 10
	// MaxPushURLBytes bounds a webhook URL.
	MaxPushURLBytes = 2048
	// MaxPushConfigIDBytes bounds a config id: it is part of delivery
	// endpoints and headers.
	MaxPushConfigIDBytes = 128
	// MaxPushSecretBytes bounds a token, a scheme and credentials: they
	// travel in every notification's headers.
	MaxPushSecretBytes = 4096
	// MaxWatchedListLimit bounds the limit of Watched.
	MaxWatchedListLimit = 1000
	// PushConfigRetention is how long a task's configs, and its entry in
	// the watched index, are kept after the last Put.
	PushConfigRetention = 30 * 24 * time.Hour
)

// ErrTooManyPushConfigs refuses a Put beyond MaxPushConfigsPerTask.
var ErrTooManyPushConfigs = errors.New("store: the task holds the maximum number of push configs")

// pushWatchBuckets is the number of hash-tag buckets the watched index is
// spread over (see redis_pushconfig.go). It is part of the stored format.
const pushWatchBuckets = 16

// pushWatchBucket places a task in its bucket.
func pushWatchBucket(agent, taskID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(agent))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(taskID))
	return int(h.Sum32() % pushWatchBuckets)
}

func checkTaskRef(agent, taskID string) error {
	return cmp.Or(checkName("agent name", agent), checkName("task id", taskID))
}

func checkPushConfigRef(agent, taskID, id string) error {
	return cmp.Or(checkTaskRef(agent, taskID), checkBounded("push config id", id, MaxPushConfigIDBytes, true))
}

// checkPushConfig validates c and returns the copy a store keeps: strings
// that pin no caller buffer, the creation time in UTC (now when zero).
func checkPushConfig(c PushConfig, now time.Time) (PushConfig, error) {
	if err := cmp.Or(checkPushConfigRef(c.Agent, c.TaskID, c.ID), checkName("tenant", c.Tenant)); err != nil {
		return PushConfig{}, err
	}
	if c.Version != a2a.V03 && c.Version != a2a.V10 {
		return PushConfig{}, fmt.Errorf("%w: push config version %s is not 0.3 or 1.0", ErrInvalidArgument, c.Version)
	}
	for _, f := range []struct {
		what  string
		v     string
		limit int
		req   bool
	}{
		{"subject", c.Subject, MaxNameBytes, false},
		{"webhook URL", c.URL, MaxPushURLBytes, true},
		{"token", c.Token, MaxPushSecretBytes, false},
		{"authentication scheme", c.AuthScheme, MaxPushSecretBytes, false},
		{"authentication credentials", c.AuthCredentials, MaxPushSecretBytes, false},
	} {
		if err := checkBounded(f.what, f.v, f.limit, f.req); err != nil {
			return PushConfig{}, err
		}
	}
	if c.Created.IsZero() {
		c.Created = now
	}
	var err error
	if c.Created, err = nanoTime("created", c.Created); err != nil {
		return PushConfig{}, err
	}
	for _, s := range []*string{&c.Agent, &c.TaskID, &c.ID, &c.Tenant, &c.Subject, &c.URL, &c.Token, &c.AuthScheme, &c.AuthCredentials} {
		*s = strings.Clone(*s)
	}
	return c, nil
}

// pushConfigRecord is a config as the Redis store encodes it; agent and
// task id are in the key, the creation time beside the record.
type pushConfigRecord struct {
	V           int    `json:"v"`
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	Subject     string `json:"sub,omitempty"`
	Version     string `json:"ver"`
	URL         string `json:"url"`
	Token       string `json:"tok,omitempty"`
	Scheme      string `json:"sch,omitempty"`
	Credentials string `json:"cred,omitempty"`
}

// pushConfigFormat is the v of every record, so the format can change
// without misreading records written by older gateways.
const pushConfigFormat = 1

func encodePushConfig(c PushConfig) []byte {
	// Marshal cannot fail on a struct of integers and strings.
	b, _ := json.Marshal(pushConfigRecord{
		V: pushConfigFormat, ID: c.ID, Tenant: c.Tenant, Subject: c.Subject, Version: c.Version.String(),
		URL: c.URL, Token: c.Token, Scheme: c.AuthScheme, Credentials: c.AuthCredentials,
	})
	return b
}

func decodePushConfig(agent, taskID string, raw []byte) (PushConfig, error) {
	var r pushConfigRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return PushConfig{}, fmt.Errorf("push config record: %w", err)
	}
	if r.V != pushConfigFormat {
		return PushConfig{}, fmt.Errorf("push config record has unknown format version %d", r.V)
	}
	for _, v := range []a2a.Version{a2a.V03, a2a.V10} {
		if r.Version == v.String() {
			return PushConfig{
				Agent: agent, TaskID: taskID, ID: r.ID, Tenant: r.Tenant, Subject: r.Subject, Version: v,
				URL: r.URL, Token: r.Token, AuthScheme: r.Scheme, AuthCredentials: r.Credentials,
			}, nil
		}
	}
	return PushConfig{}, fmt.Errorf("push config record has unknown protocol version %.8q", r.Version)
}

// checkedPushConfigs is the PushConfigs a Store hands out; see gate.
type checkedPushConfigs struct {
	gate *gate
	b    PushConfigs
}

// Put hands the back end the config checkPushConfig returns.
func (w checkedPushConfigs) Put(ctx context.Context, c PushConfig) (bool, error) {
	c, err := checkPushConfig(c, time.Now())
	if err := w.gate.check(err); err != nil {
		return false, err
	}
	return w.b.Put(ctx, c)
}

func (w checkedPushConfigs) Get(ctx context.Context, agent, taskID, id string) (PushConfig, bool, error) {
	if err := w.gate.check(checkPushConfigRef(agent, taskID, id)); err != nil {
		return PushConfig{}, false, err
	}
	return w.b.Get(ctx, agent, taskID, id)
}

func (w checkedPushConfigs) List(ctx context.Context, agent, taskID string) ([]PushConfig, error) {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return nil, err
	}
	return w.b.List(ctx, agent, taskID)
}

func (w checkedPushConfigs) Delete(ctx context.Context, agent, taskID, id string) (bool, error) {
	if err := w.gate.check(checkPushConfigRef(agent, taskID, id)); err != nil {
		return false, err
	}
	return w.b.Delete(ctx, agent, taskID, id)
}

func (w checkedPushConfigs) Watched(ctx context.Context, limit int) ([]TaskRef, error) {
	if err := w.gate.check(checkLimit(limit, MaxWatchedListLimit)); err != nil {
		return nil, err
	}
	return w.b.Watched(ctx, limit)
}

func (w checkedPushConfigs) Finish(ctx context.Context, agent, taskID string) error {
	if err := w.gate.check(checkTaskRef(agent, taskID)); err != nil {
		return err
	}
	return w.b.Finish(ctx, agent, taskID)
}
