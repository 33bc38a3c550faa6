package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunOperator runs the conformance cases of the concerns OperatorConcerns
// returns, the per-task delivery log, and the delivery store's dead-letter discard.
func RunOperator(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	t.Run("DeliveryLogKeepsEachTasksNewestAttempts", func(t *testing.T) {
		s := h.open(t, time.Hour)
		dl, ok := store.OperatorConcerns(s)
		if !ok {
			t.Fatal("OperatorConcerns: not a store of package store")
		}
		ctx := context60(t)
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		for i := range store.MaxTaskAttempts + 5 {
			a := store.TaskAttempt{Endpoint: "ep/1", ID: fmt.Sprintf("n%d", i), Attempt: store.Attempt{
				At: at.Add(time.Duration(i) * time.Second), Status: 500 + i%2, Latency: 12 * time.Millisecond,
				Err: strings.Repeat("e", store.MaxAttemptErrBytes+10), RetryAt: at.Add(time.Hour),
			}}
			if err := dl.Add(ctx, "demo", "t1", a); err != nil {
				t.Fatal(err)
			}
		}
		if err := dl.Add(ctx, "other", "t1", store.TaskAttempt{Endpoint: "ep/2", ID: "x", Attempt: store.Attempt{At: at, Status: 200}}); err != nil {
			t.Fatal(err)
		}
		got, err := dl.List(ctx, "demo", "t1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != store.MaxTaskAttempts {
			t.Fatalf("List kept %d attempts, want %d", len(got), store.MaxTaskAttempts)
		}
		first := got[0]
		if first.ID != "n5" || !first.At.Equal(at.Add(5*time.Second)) || first.Status != 501 || first.Latency != 12*time.Millisecond ||
			len(first.Err) != store.MaxAttemptErrBytes || !first.RetryAt.Equal(at.Add(time.Hour)) || first.Endpoint != "ep/1" {
			t.Fatalf("oldest kept attempt = %+v", first)
		}
		if other, err := dl.List(ctx, "other", "t1"); err != nil || len(other) != 1 || other[0].Status != 200 || !other[0].RetryAt.IsZero() {
			t.Fatalf("another agent's task with the same id: %+v, %v", other, err)
		}
		if none, err := dl.List(ctx, "demo", "t2"); err != nil || none != nil {
			t.Fatalf("a task without attempts: %+v, %v", none, err)
		}
		if err := dl.Add(ctx, "demo", "t1", store.TaskAttempt{Endpoint: "ep", ID: "n"}); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("an attempt without a time: %v, want ErrInvalidArgument", err)
		}
	})
	t.Run("DiscardRemovesOneDeadLetter", func(t *testing.T) {
		s := h.open(t, time.Hour)
		ctx := context60(t)
		q := s.Delivery()
		for _, id := range []string{"a", "b"} {
			if _, err := EnqueueOne(ctx, q, store.Delivery{ID: id, Endpoint: "ep", TaskID: "t1", Payload: []byte("{}")}); err != nil {
				t.Fatal(err)
			}
			if err := q.DeadLetter(ctx, "ep", id, "gave up", nil); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := q.DiscardDeadLetter(ctx, "ep", "a"); err != nil || !ok {
			t.Fatalf("DiscardDeadLetter(a) = %v, %v; want true", ok, err)
		}
		if ok, err := q.DiscardDeadLetter(ctx, "ep", "a"); err != nil || ok {
			t.Fatalf("DiscardDeadLetter(a) again = %v, %v; want false", ok, err)
		}
		if _, ok, err := q.GetDeadLetter(ctx, "ep", "a"); err != nil || ok {
			t.Fatalf("GetDeadLetter after discard: %v, %v", ok, err)
		}
		dls, next, err := q.DeadLetters(ctx, "", 10)
		if err != nil || next != "" || len(dls) != 1 || dls[0].ID != "b" {
			t.Fatalf("DeadLetters after discard = %+v, %q, %v; want only b", dls, next, err)
		}
		if err := q.Redeliver(ctx, "ep", "a"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Redeliver of a discarded dead letter: %v, want ErrNotFound", err)
		}
	})
}
