package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// pushKey names one event of one task.
type pushKey struct {
	task string
	seq  int
}

// receiver is the webhook of the push-relay run, on loopback in the
// harness: it acknowledges every notification at once, and counts and
// times each by the task and place the agent stamped in it.
type receiver struct {
	url  string
	srv  *http.Server
	done chan struct{}

	mu      sync.Mutex
	seen    map[pushKey]int
	firstAt map[pushKey]time.Time // when each event was first received
	hist    *Histogram
	total   int64
	// extra counts notifications without the agent's stamp: task
	// snapshots a subscription to the agent starts with.
	extra, unreadable int64
	first, last       time.Time // first event written, last stamped notification received
}

// pushNote is what the receiver reads of a 1.0 StreamResponse.
type pushNote struct {
	Task           *pushObject `json:"task"`
	StatusUpdate   *pushObject `json:"statusUpdate"`
	ArtifactUpdate *pushObject `json:"artifactUpdate"`
}

type pushObject struct {
	ID       string `json:"id"`
	TaskID   string `json:"taskId"`
	Metadata struct {
		Bench *struct {
			Seq int   `json:"seq"`
			At  int64 `json:"at"`
		} `json:"bench"`
	} `json:"metadata"`
}

func startReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("receiver: listen: %w", err)
	}
	rc := &receiver{
		url: "http://" + l.Addr().String() + "/hook", done: make(chan struct{}),
		seen: map[pushKey]int{}, firstAt: map[pushKey]time.Time{}, hist: NewHistogram(),
	}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(rc.done)
		_ = rc.srv.Serve(l)
	}()
	return rc, nil
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	now := time.Now()
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, "POST a notification", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	var n pushNote
	obj := (*pushObject)(nil)
	if json.Unmarshal(body, &n) == nil {
		switch {
		case n.Task != nil:
			n.Task.TaskID = n.Task.ID
			obj = n.Task
		case n.StatusUpdate != nil:
			obj = n.StatusUpdate
		case n.ArtifactUpdate != nil:
			obj = n.ArtifactUpdate
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.total++
	switch {
	case obj == nil:
		rc.unreadable++
	case obj.Metadata.Bench == nil:
		rc.extra++
	default:
		b := obj.Metadata.Bench
		k := pushKey{obj.TaskID, b.Seq}
		if rc.seen[k]++; rc.seen[k] == 1 {
			rc.firstAt[k] = now
		}
		at := time.Unix(0, b.At)
		rc.hist.Record(now.Sub(at))
		if rc.first.IsZero() || at.Before(rc.first) {
			rc.first = at
		}
		if now.After(rc.last) {
			rc.last = now
		}
	}
}

// missing counts the events of want not received yet.
func (rc *receiver) missing(want map[pushKey]time.Time) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for k := range want {
		if rc.seen[k] == 0 {
			n++
		}
	}
	return n
}

func (rc *receiver) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := rc.srv.Shutdown(ctx)
	<-rc.done
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("receiver: %w", err)
	}
	return nil
}
