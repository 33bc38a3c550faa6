package goclient

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
)

// describe names an event the way the cases compare them: "task:submitted",
// "status:working", "artifact:chunk 1", "message".
func describe(ev a2a.Event) string {
	switch v := ev.(type) {
	case *a2a.Task:
		return "task:" + string(v.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		return "status:" + string(v.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		return "artifact:" + partsText(v.Artifact.Parts)
	case *a2a.Message:
		return "message"
	default:
		return fmt.Sprintf("unknown:%T", ev)
	}
}

func describeAll(evs []a2a.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = describe(ev)
	}
	return out
}

func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(a2a.TextPart); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func artifactTexts(t *a2a.Task) []string {
	var out []string
	for _, a := range t.Artifacts {
		if a != nil {
			out = append(out, partsText(a.Parts))
		}
	}
	return out
}

type item struct {
	ev  a2a.Event
	err error
}

// stream reads an SDK event sequence in its own goroutine, so a case can
// start a request, do something else while it is open, and read on.
type stream struct {
	items <-chan item
	stop  chan struct{}
}

func startStream(ctx context.Context, seq iter.Seq2[a2a.Event, error]) *stream {
	items := make(chan item)
	stop := make(chan struct{})
	go func() {
		defer close(items)
		for ev, err := range seq {
			select {
			case items <- item{ev, err}:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return &stream{items: items, stop: stop}
}

// next returns the next event; ok is false at the end of the stream.
func (s *stream) next(ctx context.Context) (ev a2a.Event, ok bool, err error) {
	select {
	case it, open := <-s.items:
		if !open {
			return nil, false, nil
		}
		return it.ev, it.err == nil, it.err
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// until reads up to and including the event described as want.
func (s *stream) until(ctx context.Context, want string) ([]a2a.Event, error) {
	var seen []a2a.Event
	for {
		ev, ok, err := s.next(ctx)
		if err != nil {
			return seen, err
		}
		if !ok {
			return seen, fmt.Errorf("the stream ended after %q before %s", describeAll(seen), want)
		}
		seen = append(seen, ev)
		if describe(ev) == want {
			return seen, nil
		}
	}
}

// rest reads to the end of the stream.
func (s *stream) rest(ctx context.Context) ([]a2a.Event, error) {
	var seen []a2a.Event
	for {
		ev, ok, err := s.next(ctx)
		if err != nil || !ok {
			return seen, err
		}
		seen = append(seen, ev)
	}
}

// close stops reading; the request's context ends the request itself.
func (s *stream) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
}
