package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

// RunDelivery runs the DeliveryStore conformance cases against newStore.
func RunDelivery(t *testing.T, newStore NewStore) {
	t.Helper()
	h := harness{newStore: newStore}
	for _, tc := range []struct {
		name string
		run  func(*testing.T, harness)
	}{
		{"OrderPerEndpoint", testDeliveryOrder},
		{"IdempotentEnqueue", testDeliveryIdempotent},
		{"ConcurrentEnqueueOfOneID", testDeliveryConcurrentEnqueue},
		{"AckRemovesOnlyTheHead", testDeliveryAckOnlyHead},
		{"AttemptLog", testDeliveryAttempts},
		{"DeadLetterAndRedeliver", testDeliveryDeadLetter},
		{"DeadLetterPages", testDeliveryDeadLetterPages},
		{"DisableEndpoint", testDeliveryDisable},
		{"ClaimExclusivity", testDeliveryClaim},
		{"HeadWithClaimAndAck", testDeliveryHead},
		{"AckHeadsBatch", testDeliveryAckHeads},
		{"EnqueueAll", testDeliveryEnqueueAll},
		{"EnqueueClaim", testDeliveryEnqueueClaim},
		{"LeaseExpires", testDeliveryLeaseExpiry},
		{"EndpointsAreDueInOrder", testDeliveryEndpointsDue},
		{"DepthAndBacklog", testDeliveryDepth},
		{"SeparatorsDoNotCollide", testDeliverySeparators},
		{"ArgumentLimits", testDeliveryArguments},
		{"ClosedStoreIsUnavailable", testDeliveryClosed},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h) })
	}
}

func (h harness) delivery(t *testing.T) store.DeliveryStore {
	t.Helper()
	return h.open(t, time.Hour).Delivery()
}

// dTime is a fixed event time, so round trips compare exactly.
func dTime(i int) time.Time {
	return time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(i) * time.Second)
}

// dMillis is dTime(i) to the millisecond, as Backlog reports it.
func dMillis(i int) time.Time { return dTime(i).Truncate(time.Millisecond) }

func dNew(endpoint, id string, i int) store.Delivery {
	return store.Delivery{
		ID: id, Endpoint: endpoint, TaskID: "task-" + endpoint,
		// Binary, with a NUL and a newline: the store must not interpret it.
		Payload:  []byte(fmt.Sprintf("payload\x00\n\xff%s", id)),
		Enqueued: dTime(i),
	}
}

func dEnqueue(t *testing.T, s store.DeliveryStore, d store.Delivery) bool {
	t.Helper()
	queued, err := EnqueueOne(context60(t), s, d)
	if err != nil {
		t.Fatalf("Enqueue(%q, %q): %v", d.Endpoint, d.ID, err)
	}
	return queued
}

// dHeadAttempts returns the attempt log of the head of endpoint's queue,
// which must be id.
func dHeadAttempts(t *testing.T, s store.DeliveryStore, endpoint, id string) []store.Attempt {
	t.Helper()
	d, atts, ok, err := ReadHead(context60(t), s, endpoint)
	if err != nil || !ok || d.ID != id {
		t.Fatalf("Head(%q) = %q, %v, %v; want %q", endpoint, d.ID, ok, err, id)
	}
	return atts
}

func dHead(t *testing.T, s store.DeliveryStore, endpoint string) (store.Delivery, bool) {
	t.Helper()
	d, _, ok, err := ReadHead(context60(t), s, endpoint)
	if err != nil {
		t.Fatalf("Head(%q): %v", endpoint, err)
	}
	return d, ok
}

func dAck(t *testing.T, s store.DeliveryStore, endpoint, id string) {
	t.Helper()
	if _, err := s.AckHeads(context60(t), endpoint, []string{id}, "", 1); err != nil {
		t.Fatalf("AckHead(%q, %q): %v", endpoint, id, err)
	}
}

// dDrain acks every delivery of the endpoint, returning their ids in order.
func dDrain(t *testing.T, s store.DeliveryStore, endpoint string) []string {
	t.Helper()
	var ids []string
	for range store.MaxQueueLength {
		d, ok := dHead(t, s, endpoint)
		if !ok {
			return ids
		}
		ids = append(ids, d.ID)
		dAck(t, s, endpoint, d.ID)
	}
	t.Fatalf("endpoint %q never drained", endpoint)
	return nil
}

func dAssertDelivery(t *testing.T, what string, got, want store.Delivery) {
	t.Helper()
	if got.ID != want.ID || got.Endpoint != want.Endpoint || got.TaskID != want.TaskID ||
		!bytes.Equal(got.Payload, want.Payload) || !got.Enqueued.Equal(want.Enqueued) || got.Enqueued.Location() != time.UTC {
		t.Errorf("%s = %+v, want %+v", what, got, want)
	}
}

func dAttempt(i int, retry bool) store.Attempt {
	a := store.Attempt{At: dTime(100 + i), Status: 500 + i, Latency: time.Duration(i+1) * time.Millisecond, Err: fmt.Sprintf("attempt %d\nfailed", i)}
	if retry {
		a.RetryAt = dTime(200 + i)
	}
	return a
}

func dAssertAttempts(t *testing.T, what string, got, want []store.Attempt) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d attempts, want %d: %+v", what, len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) || g.Status != w.Status || g.Latency != w.Latency || g.Err != w.Err || !g.RetryAt.Equal(w.RetryAt) || g.RetryAt.IsZero() != w.RetryAt.IsZero() {
			t.Errorf("%s: attempt %d = %+v, want %+v", what, i, g, w)
		}
	}
}

func dEndpoints(t *testing.T, s store.DeliveryStore, limit int) []string {
	t.Helper()
	eps, err := s.Endpoints(context60(t), limit)
	if err != nil {
		t.Fatalf("Endpoints(%d): %v", limit, err)
	}
	return eps
}

func dAllDeadLetters(t *testing.T, s store.DeliveryStore, limit int) (all []store.DeadLetter, pages int) {
	t.Helper()
	cursor := ""
	for range 1000 {
		page, next, err := s.DeadLetters(context60(t), cursor, limit)
		if err != nil {
			t.Fatalf("DeadLetters(%q, %d): %v", cursor, limit, err)
		}
		if len(page) > limit {
			t.Fatalf("DeadLetters returned %d, over the limit of %d", len(page), limit)
		}
		all = append(all, page...)
		pages++
		if next == "" {
			return all, pages
		}
		cursor = next
	}
	t.Fatal("DeadLetters never ended")
	return nil, 0
}

func testDeliveryOrder(t *testing.T, h harness) {
	s := h.delivery(t)
	var want = map[string][]store.Delivery{}
	for i := range 12 {
		ep := []string{"ep-a", "ep-b", "ep-c"}[i%3]
		d := dNew(ep, fmt.Sprintf("n-%02d", i), i)
		if !dEnqueue(t, s, d) {
			t.Fatalf("Enqueue of a new id reported a duplicate")
		}
		want[ep] = append(want[ep], d)
	}
	for ep, ds := range want {
		for i, w := range ds {
			got, ok := dHead(t, s, ep)
			if !ok {
				t.Fatalf("%s: queue empty after %d of %d", ep, i, len(ds))
			}
			dAssertDelivery(t, fmt.Sprintf("%s head %d", ep, i), got, w)
			// Head does not remove.
			again, _ := dHead(t, s, ep)
			dAssertDelivery(t, fmt.Sprintf("%s head %d read twice", ep, i), again, w)
			dAck(t, s, ep, got.ID)
		}
		if _, ok := dHead(t, s, ep); ok {
			t.Errorf("%s: not empty after every ack", ep)
		}
	}
	// A zero Enqueued means now.
	before := time.Now().Add(-time.Second)
	d := dNew("ep-now", "x", 0)
	d.Enqueued = time.Time{}
	dEnqueue(t, s, d)
	got, _ := dHead(t, s, "ep-now")
	if got.Enqueued.Before(before) || got.Enqueued.After(time.Now().Add(time.Second)) {
		t.Errorf("Enqueued of a delivery enqueued without one = %s, want about now", got.Enqueued)
	}
}

func testDeliveryIdempotent(t *testing.T, h harness) {
	s := h.delivery(t)
	d := dNew("ep", "same", 0)
	for i, want := range []bool{true, false, false} {
		if got := dEnqueue(t, s, d); got != want {
			t.Fatalf("Enqueue %d of one id: queued = %v, want %v", i, got, want)
		}
	}
	other := d
	other.Payload = []byte("another body under the same id")
	if dEnqueue(t, s, other) {
		t.Fatal("a second delivery with a queued id was stored")
	}
	if got, _ := dHead(t, s, "ep"); !bytes.Equal(got.Payload, d.Payload) {
		t.Fatalf("the duplicate replaced the first: payload %q", got.Payload)
	}
	// The same id on another endpoint is another delivery.
	if !dEnqueue(t, s, dNew("ep-2", "same", 0)) {
		t.Fatal("an id queued on one endpoint was refused on another")
	}
	if ids := dDrain(t, s, "ep"); !slices.Equal(ids, []string{"same"}) {
		t.Fatalf("queue = %q, want the id once", ids)
	}
	// Delivered ids are remembered for DeliveryIDRetention.
	if dEnqueue(t, s, d) {
		t.Fatal("an id delivered a moment ago was queued again")
	}
	if _, ok := dHead(t, s, "ep"); ok {
		t.Fatal("the queue is not empty after a late duplicate")
	}
}

func testDeliveryConcurrentEnqueue(t *testing.T, h harness) {
	s := h.delivery(t)
	const callers = 32
	var wg sync.WaitGroup
	results := make([]bool, callers)
	errs := make([]error, callers)
	ctx := context60(t)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = EnqueueOne(ctx, s, dNew("ep", "contended", 0)) })
	}
	wg.Wait()
	n := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("Enqueue %d: %v", i, errs[i])
		}
		if results[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d concurrent enqueues of one id stored it %d times, want once", callers, n)
	}
	if got, _, err := s.Depth(ctx, "ep"); err != nil || got != 1 {
		t.Fatalf("Depth = %d, %v; want 1", got, err)
	}
}

func testDeliveryAckOnlyHead(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	for i, id := range []string{"first", "second", "third"} {
		dEnqueue(t, s, dNew("ep", id, i))
	}
	for _, id := range []string{"second", "third"} {
		if _, err := s.AckHeads(ctx, "ep", []string{id}, "", 1); !errors.Is(err, store.ErrNotHead) {
			t.Fatalf("AckHead(%q) behind the head: %v, want ErrNotHead", id, err)
		}
		if err := s.DeadLetter(ctx, "ep", id, "r", nil); !errors.Is(err, store.ErrNotHead) {
			t.Fatalf("DeadLetter(%q) behind the head: %v, want ErrNotHead", id, err)
		}
	}
	for _, id := range []string{"never-queued", "first"} {
		dAck(t, s, "ep", id)
	}
	// Acking an id twice, or one that is gone, removes nothing more.
	dAck(t, s, "ep", "first")
	if err := s.DeadLetter(ctx, "ep", "first", "r", nil); err != nil {
		t.Fatalf("DeadLetter of a delivered id: %v", err)
	}
	if ids := dDrain(t, s, "ep"); !slices.Equal(ids, []string{"second", "third"}) {
		t.Fatalf("queue after acking the head = %q", ids)
	}
	if dl, ok, err := s.GetDeadLetter(ctx, "ep", "first"); err != nil || ok {
		t.Fatalf("GetDeadLetter of an acked id = %+v, %v, %v", dl, ok, err)
	}
}

func testDeliveryAttempts(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	dEnqueue(t, s, dNew("ep", "a", 0))
	if atts := dHeadAttempts(t, s, "ep", "a"); len(atts) != 0 {
		t.Fatalf("attempts before any = %v", atts)
	}
	var want []store.Attempt
	for i := range store.MaxDeliveryAttempts + 3 {
		a := dAttempt(i, i%2 == 0)
		if err := s.RecordAttempt(ctx, "ep", "a", a); err != nil {
			t.Fatalf("RecordAttempt %d: %v", i, err)
		}
		want = append(want, a)
	}
	dAssertAttempts(t, "log", dHeadAttempts(t, s, "ep", "a"), want[len(want)-store.MaxDeliveryAttempts:])

	long := store.Attempt{At: dTime(1), Err: strings.Repeat("é", store.MaxAttemptErrBytes)}
	if err := s.RecordAttempt(ctx, "ep", "a", long); err != nil {
		t.Fatal(err)
	}
	atts := dHeadAttempts(t, s, "ep", "a")
	if last := atts[len(atts)-1].Err; len(last) > store.MaxAttemptErrBytes || !strings.HasPrefix(long.Err, last) || last == "" {
		t.Errorf("a long error was kept as %d bytes, want a prefix of at most %d", len(last), store.MaxAttemptErrBytes)
	}

	if err := s.RecordAttempt(ctx, "ep", "not-queued", dAttempt(0, false)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordAttempt of an id not queued: %v, want ErrNotFound", err)
	}
	dAck(t, s, "ep", "a")
	if _, atts, found, err := ReadHead(ctx, s, "ep"); err != nil || found || len(atts) != 0 {
		t.Errorf("attempts after the ack = %v, %v; want none", atts, err)
	}
	if err := s.RecordAttempt(ctx, "ep", "a", dAttempt(0, false)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordAttempt after the ack: %v, want ErrNotFound", err)
	}
}

func testDeliveryDeadLetter(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	first, second := dNew("ep", "first", 0), dNew("ep", "second", 1)
	dEnqueue(t, s, first)
	dEnqueue(t, s, second)
	logged := []store.Attempt{dAttempt(0, true), dAttempt(1, true)}
	for _, a := range logged {
		if err := s.RecordAttempt(ctx, "ep", "first", a); err != nil {
			t.Fatal(err)
		}
	}
	final := append(slices.Clone(logged), dAttempt(2, false))
	before := time.Now().Add(-time.Second)
	if err := s.DeadLetter(ctx, "ep", "first", "retries exhausted", final); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	if head, _ := dHead(t, s, "ep"); head.ID != "second" {
		t.Fatalf("head after the dead letter = %q, want second", head.ID)
	}
	dl, ok, err := s.GetDeadLetter(ctx, "ep", "first")
	if err != nil || !ok {
		t.Fatalf("GetDeadLetter = %v, %v", ok, err)
	}
	dAssertDelivery(t, "dead letter", dl.Delivery, first)
	dAssertAttempts(t, "dead letter attempts", dl.Attempts, final)
	if dl.Reason != "retries exhausted" || dl.At.Before(before) || dl.At.After(time.Now().Add(time.Second)) {
		t.Errorf("dead letter reason %q at %s", dl.Reason, dl.At)
	}
	list, _ := dAllDeadLetters(t, s, 10)
	if len(list) != 1 || list[0].ID != "first" || len(list[0].Attempts) != 3 {
		t.Fatalf("DeadLetters = %+v", list)
	}
	// A dead-lettered id is remembered like a delivered one.
	if dEnqueue(t, s, first) {
		t.Fatal("a dead-lettered id was queued again by Enqueue")
	}

	if err := s.Redeliver(ctx, "ep", "first"); err != nil {
		t.Fatalf("Redeliver: %v", err)
	}
	if _, ok, _ := s.GetDeadLetter(ctx, "ep", "first"); ok {
		t.Error("the dead letter is still there after Redeliver")
	}
	if err := s.Redeliver(ctx, "ep", "first"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Redeliver: %v, want ErrNotFound", err)
	}
	// Back at the end of its queue, with the event time it had.
	head, _ := dHead(t, s, "ep")
	dAck(t, s, "ep", head.ID)
	redelivered, ok := dHead(t, s, "ep")
	if !ok {
		t.Fatal("the redelivered notification is not queued")
	}
	if atts := dHeadAttempts(t, s, "ep", "first"); len(atts) != 0 {
		t.Errorf("a redelivered notification starts with %d attempts, want none", len(atts))
	}
	dAssertDelivery(t, "redelivered", redelivered, first)
	if eps := dEndpoints(t, s, 10); !slices.Contains(eps, "ep") {
		t.Errorf("Endpoints = %q, want the endpoint of the redelivered notification", eps)
	}
	if list, _ := dAllDeadLetters(t, s, 10); len(list) != 0 {
		t.Errorf("dead letters after redelivery = %+v", list)
	}
}

func testDeliveryDeadLetterPages(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	var want []string
	// Several endpoints, so that the dead letters span buckets; a pause
	// between them, so that their times differ and fix the order.
	for i := range 7 {
		ep := fmt.Sprintf("endpoint-%d", i%4)
		id := fmt.Sprintf("id-%d", i)
		dEnqueue(t, s, dNew(ep, id, i))
		if err := s.DeadLetter(ctx, ep, id, "gone", nil); err != nil {
			t.Fatal(err)
		}
		want = append(want, ep+"/"+id)
		time.Sleep(3 * time.Millisecond)
	}
	for _, limit := range []int{1, 3, 7, store.MaxDeadLetterListLimit} {
		all, pages := dAllDeadLetters(t, s, limit)
		var got []string
		for _, dl := range all {
			got = append(got, dl.Endpoint+"/"+dl.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: dead letters = %q, want oldest first %q", limit, got, want)
		}
		if min := (len(want) + limit - 1) / limit; pages < min || pages > min+1 {
			t.Errorf("limit %d: %d pages for %d dead letters", limit, pages, len(want))
		}
	}
	for _, bad := range []string{"x", "bm90IGEgY3Vyc29y", strings.Repeat("A", 5000)} {
		if _, _, err := s.DeadLetters(ctx, bad, 10); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("DeadLetters(cursor %.16q): %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func testDeliveryDisable(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	for i := range 3 {
		dEnqueue(t, s, dNew("ep", fmt.Sprintf("n%d", i), i))
	}
	dEnqueue(t, s, dNew("other", "n0", 0))
	if err := s.RecordAttempt(ctx, "ep", "n0", dAttempt(0, false)); err != nil {
		t.Fatal(err)
	}
	moved, err := s.DisableEndpoint(ctx, "ep", "receiver answered 410 Gone")
	if err != nil || moved != 3 {
		t.Fatalf("DisableEndpoint = %d, %v; want 3", moved, err)
	}
	if _, ok := dHead(t, s, "ep"); ok {
		t.Fatal("a disabled endpoint still has queued deliveries")
	}
	if _, err := EnqueueOne(ctx, s, dNew("ep", "later", 5)); !errors.Is(err, store.ErrEndpointDisabled) {
		t.Fatalf("Enqueue to a disabled endpoint: %v, want ErrEndpointDisabled", err)
	}
	if eps := dEndpoints(t, s, 10); slices.Contains(eps, "ep") || !slices.Contains(eps, "other") {
		t.Errorf("Endpoints = %q, want other and not the disabled one", eps)
	}
	dl, ok, err := s.GetDeadLetter(ctx, "ep", "n0")
	if err != nil || !ok || dl.Reason != "receiver answered 410 Gone" || len(dl.Attempts) != 1 {
		t.Fatalf("dead letter of the head = %+v, %v, %v", dl, ok, err)
	}
	if all, _ := dAllDeadLetters(t, s, 10); len(all) != 3 {
		t.Fatalf("%d dead letters, want 3", len(all))
	}
	// Other endpoints are untouched.
	if d, ok := dHead(t, s, "other"); !ok || d.ID != "n0" {
		t.Fatalf("the other endpoint's head = %+v, %v", d, ok)
	}
	// Redelivery re-enables the endpoint.
	if err := s.Redeliver(ctx, "ep", "n1"); err != nil {
		t.Fatal(err)
	}
	if !dEnqueue(t, s, dNew("ep", "later", 5)) {
		t.Fatal("Enqueue after redelivery was not stored")
	}
	if ids := dDrain(t, s, "ep"); !slices.Equal(ids, []string{"n1", "later"}) {
		t.Fatalf("queue after redelivery = %q", ids)
	}
}

func testDeliveryClaim(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	claim := func(ep, holder string) bool {
		t.Helper()
		ok, err := s.ClaimEndpoint(ctx, ep, holder, time.Hour)
		if err != nil {
			t.Fatalf("ClaimEndpoint(%q, %q): %v", ep, holder, err)
		}
		return ok
	}
	release := func(ep, holder string) {
		t.Helper()
		if err := s.ReleaseEndpoint(ctx, ep, holder, time.Time{}); err != nil {
			t.Fatalf("ReleaseEndpoint(%q, %q): %v", ep, holder, err)
		}
	}
	dEnqueue(t, s, dNew("ep", "a", 0))
	for _, c := range []struct {
		holder string
		want   bool
	}{{"replica-1", true}, {"replica-2", false}, {"replica-1", true}} {
		if got := claim("ep", c.holder); got != c.want {
			t.Fatalf("Claim by %s = %v, want %v", c.holder, got, c.want)
		}
	}
	release("ep", "replica-2") // not the holder: nothing happens
	if claim("ep", "replica-3") {
		t.Fatal("a release by another holder freed the lease")
	}
	release("ep", "replica-1")
	if !claim("ep", "replica-2") {
		t.Fatal("the endpoint could not be claimed after its holder released it")
	}
	// An endpoint without deliveries can be claimed too.
	if !claim("empty", "replica-1") || claim("empty", "replica-2") {
		t.Fatal("claims of an empty endpoint are not exclusive")
	}

	const claimants = 24
	var wg sync.WaitGroup
	wins := make([]bool, claimants)
	errs := make([]error, claimants)
	for i := range claimants {
		wg.Go(func() { wins[i], errs[i] = s.ClaimEndpoint(ctx, "contended", fmt.Sprint("holder-", i), time.Hour) })
	}
	wg.Wait()
	n := 0
	for i := range claimants {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		if wins[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d concurrent claims: %d won, want exactly 1", claimants, n)
	}
}

// testDeliveryHead: ClaimHead and AckHeads answer with the head and
// its attempt log, and an AckHeads that empties the queue gives the lease
// back.
func testDeliveryHead(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	const (
		ep  = "acme:agent:t1:cfg"
		ttl = time.Hour
	)
	type head struct {
		d    store.Delivery
		atts []store.Attempt
		ok   bool
	}
	want := func(t *testing.T, what string, h head, err error, i int, attempts []store.Attempt) {
		t.Helper()
		switch {
		case err != nil:
			t.Fatalf("%s: %v", what, err)
		case i < 0 && h.ok:
			t.Fatalf("%s: head %q, want an empty queue", what, h.d.ID)
		case i < 0:
		case !h.ok:
			t.Fatalf("%s: an empty queue, want the head e%d", what, i)
		default:
			dAssertDelivery(t, what, h.d, dNew(ep, fmt.Sprint("e", i), i))
			dAssertAttempts(t, what, h.atts, attempts)
		}
	}
	claim := func(t *testing.T, holder string, wantClaimed bool) head {
		t.Helper()
		claimed, d, atts, ok, err := s.ClaimHead(ctx, ep, holder, ttl)
		if err != nil || claimed != wantClaimed {
			t.Fatalf("ClaimHead(%s) = %v, %v; want claimed %v", holder, claimed, err, wantClaimed)
		}
		return head{d, atts, ok}
	}
	ack := func(id, holder string) (head, error) {
		next, err := s.AckHeads(ctx, ep, []string{id}, holder, 1)
		if len(next) == 0 {
			return head{}, err
		}
		return head{next[0].Delivery, next[0].Attempts, true}, err
	}

	d, atts, ok, err := ReadHead(ctx, s, ep)
	want(t, "Head of no queue", head{d, atts, ok}, err, -1, nil)
	for i := range 3 {
		dEnqueue(t, s, dNew(ep, fmt.Sprint("e", i), i))
	}
	failed := dAttempt(0, true)
	if err := s.RecordAttempt(ctx, ep, "e0", failed); err != nil {
		t.Fatal(err)
	}
	want(t, "ClaimHead(w1)", claim(t, "w1", true), nil, 0, []store.Attempt{failed})
	if h := claim(t, "w2", false); h.ok {
		t.Fatalf("a refused claim read the head %q", h.d.ID)
	}
	d, atts, ok, err = ReadHead(ctx, s, ep)
	want(t, "Head", head{d, atts, ok}, err, 0, []store.Attempt{failed})

	h1, err := ack("e0", "w1")
	want(t, "AckHead(e0)", h1, err, 1, nil)
	claim(t, "w2", false) // w1 keeps the lease while the queue holds more
	h1, err = ack("e0", "w1")
	want(t, "AckHead(e0) again", h1, err, 1, nil)
	if _, err := ack("e2", "w1"); !errors.Is(err, store.ErrNotHead) {
		t.Fatalf("AckHead of a delivery behind the head: %v, want ErrNotHead", err)
	}
	h1, err = ack("e1", "w1")
	want(t, "AckHead(e1)", h1, err, 2, nil)
	h1, err = ack("e2", "w1")
	want(t, "AckHead(e2)", h1, err, -1, nil)
	want(t, "ClaimHead(w2) of the emptied queue", claim(t, "w2", true), nil, -1, nil)
	// An acknowledgement seen before also gives an empty queue back.
	h1, err = ack("e2", "w2")
	want(t, "AckHead(e2) again", h1, err, -1, nil)
	claim(t, "w3", true)
	// "" acknowledges and keeps the lease.
	dEnqueue(t, s, dNew(ep, "e3", 3))
	h1, err = ack("e3", "")
	want(t, "AckHead(e3) keeping the lease", h1, err, -1, nil)
	claim(t, "w4", false)
	if n, _, err := s.Backlog(ctx); err != nil || n != 0 {
		t.Fatalf("backlog %d, %v; want 0", n, err)
	}
}

// testDeliveryAckHeads: AckHeads removes several heads in one call, in
// order, reads up to its limit of heads after them, stops at a delivery
// queued behind the head keeping the removals before it, skips ids
// acknowledged before (in the same call too), and gives the lease back when the queue empties.
func testDeliveryAckHeads(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	const ep = "acme:agent:t1:cfg"
	heads := func(what string, got []store.Queued, err error, want ...int) {
		t.Helper()
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d heads, %v; want %d", what, len(got), err, len(want))
		}
		for i, w := range want {
			dAssertDelivery(t, fmt.Sprintf("%s: head %d", what, i), got[i].Delivery, dNew(ep, fmt.Sprint("e", w), w))
		}
	}
	for i := range 6 {
		dEnqueue(t, s, dNew(ep, fmt.Sprint("e", i), i))
	}
	failed := dAttempt(0, true)
	if err := s.RecordAttempt(ctx, ep, "e2", failed); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ClaimEndpoint(ctx, ep, "w1", time.Hour); err != nil || !ok {
		t.Fatalf("ClaimEndpoint = %v, %v", ok, err)
	}
	got, err := s.AckHeads(ctx, ep, nil, "w1", 3)
	heads("AckHeads of none", got, err, 0, 1, 2)
	dAssertAttempts(t, "attempts of e2", got[2].Attempts, []store.Attempt{failed})
	got, err = s.AckHeads(ctx, ep, []string{"e0", "e1"}, "w1", 2)
	heads("AckHeads(e0, e1)", got, err, 2, 3)
	if _, err := s.AckHeads(ctx, ep, []string{"e1", "e2", "e4"}, "w1", 1); !errors.Is(err, store.ErrNotHead) {
		t.Fatalf("AckHeads past the head: %v, want ErrNotHead", err)
	}
	got, err = s.AckHeads(ctx, ep, []string{"e2"}, "w1", store.MaxHeadsPerRead)
	heads("AckHeads(e2) again", got, err, 3, 4, 5)
	if n, _, err := s.Depth(ctx, ep); err != nil || n != 3 {
		t.Fatalf("depth %d, %v; want 3", n, err)
	}
	// An id named twice is removed once, then skipped as acknowledged.
	got, err = s.AckHeads(ctx, ep, []string{"e3", "e3"}, "w1", 1)
	heads("AckHeads(e3, e3)", got, err, 4)
	if n, _, err := s.Depth(ctx, ep); err != nil || n != 2 {
		t.Fatalf("depth %d, %v; want 2", n, err)
	}
	got, err = s.AckHeads(ctx, ep, []string{"e3", "e4", "e5"}, "w1", 1)
	heads("AckHeads(e3, e4, e5)", got, err)
	if ok, err := s.ClaimEndpoint(ctx, ep, "w2", time.Hour); err != nil || !ok {
		t.Fatalf("ClaimEndpoint of the emptied queue = %v, %v; want the lease given back", ok, err)
	}
	// A read stops before the payload it holds passes MaxHeadBytesPerRead.
	for i := range 2 {
		d := dNew("big", fmt.Sprint("b", i), i)
		d.Payload = bytes.Repeat([]byte{'x'}, store.MaxHeadBytesPerRead*2/3)
		dEnqueue(t, s, d)
	}
	if got, err := s.AckHeads(ctx, "big", nil, "", 2); err != nil || len(got) != 1 {
		t.Fatalf("AckHeads of two large heads: %d heads, %v; want 1", len(got), err)
	}
}

// testDeliveryEnqueueAll: EnqueueAll answers for each delivery what Enqueue
// would, each on its own.
func testDeliveryEnqueueAll(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	dEnqueue(t, s, dNew("ep-a", "old", 0))
	if _, err := s.DisableEndpoint(ctx, "ep-off", "gone"); err != nil {
		t.Fatal(err)
	}
	ds := []store.Delivery{dNew("ep-a", "e1", 1), dNew("ep-b", "e1", 2), dNew("ep-a", "old", 0), dNew("ep-off", "e1", 3), dNew("", "e1", 4), dNew("ep-a", "e2", 5)}
	wantQueued := []bool{true, true, false, false, false, true}
	wantErrs := []error{nil, nil, nil, store.ErrEndpointDisabled, store.ErrInvalidArgument, nil}
	queued, errs := s.EnqueueAll(ctx, ds)
	if len(queued) != len(ds) || len(errs) != len(ds) {
		t.Fatalf("EnqueueAll answered %d and %d results for %d deliveries", len(queued), len(errs), len(ds))
	}
	for i := range ds {
		if queued[i] != wantQueued[i] || !errors.Is(errs[i], wantErrs[i]) || (wantErrs[i] == nil) != (errs[i] == nil) {
			t.Errorf("delivery %d (%s %s): %v, %v; want %v, %v", i, ds[i].Endpoint, ds[i].ID, queued[i], errs[i], wantQueued[i], wantErrs[i])
		}
	}
	if _, errs := s.EnqueueAll(ctx, nil); len(errs) != 0 {
		t.Fatalf("EnqueueAll of nothing answered %v", errs)
	}
	for ep, want := range map[string][]string{"ep-a": {"old", "e1", "e2"}, "ep-b": {"e1"}} {
		if got := dDrain(t, s, ep); !slices.Equal(got, want) {
			t.Fatalf("%s queued %v, want %v", ep, got, want)
		}
	}
}

// testDeliveryEnqueueClaim: EnqueueClaim enqueues as Enqueue does and
// claims the endpoint, with its head, only when the delivery was added and
// the lease is free or the holder's own; a claimed endpoint is not due for
// other workers.
func testDeliveryEnqueueClaim(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	const ttl = time.Hour
	if _, err := s.DisableEndpoint(ctx, "off", "gone"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		d       store.Delivery
		holder  string
		queued  bool
		claimed bool
		head    string
		err     error
	}{
		{"idle endpoint", dNew("ep", "e1", 1), "a", true, true, "e1", nil},
		{"held by another", dNew("ep", "e2", 2), "b", true, false, "", nil},
		{"held by the holder", dNew("ep", "e3", 3), "a", true, true, "e1", nil},
		{"a repeat", dNew("ep", "e3", 3), "a", false, false, "", nil},
		{"disabled endpoint", dNew("off", "e1", 1), "a", false, false, "", store.ErrEndpointDisabled},
		{"no endpoint", dNew("", "e1", 1), "a", false, false, "", store.ErrInvalidArgument},
	} {
		queued, claimed, head, atts, err := s.EnqueueClaim(ctx, tc.d, tc.holder, ttl)
		switch {
		case !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil):
			t.Fatalf("%s: error %v, want %v", tc.name, err, tc.err)
		case queued != tc.queued || claimed != tc.claimed || head.ID != tc.head || len(atts) != 0:
			t.Fatalf("%s: queued %v, claimed %v, head %q; want %v, %v, %q", tc.name, queued, claimed, head.ID, tc.queued, tc.claimed, tc.head)
		case claimed:
			dAssertDelivery(t, tc.name, head, dNew("ep", "e1", 1))
		}
	}
	// Claimed, the endpoint is no other worker's to find.
	if eps := dEndpoints(t, s, 10); slices.Contains(eps, "ep") {
		t.Fatalf("due endpoints %v; want ep claimed away", eps)
	}
	if ok, err := s.ClaimEndpoint(ctx, "ep", "b", ttl); err != nil || ok {
		t.Fatalf("another holder claimed a claimed endpoint: %v, %v", ok, err)
	}
	if got, want := dDrain(t, s, "ep"), []string{"e1", "e2", "e3"}; !slices.Equal(got, want) {
		t.Fatalf("queued %v, want %v", got, want)
	}
}

func testDeliveryLeaseExpiry(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	dEnqueue(t, s, dNew("ep", "a", 0))
	if ok, err := s.ClaimEndpoint(ctx, "ep", "dead-replica", 150*time.Millisecond); err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if eps := dEndpoints(t, s, 10); slices.Contains(eps, "ep") {
		t.Fatalf("a claimed endpoint is due: %q", eps)
	}
	// The holder dies without releasing: the endpoint becomes due and
	// claimable again when the lease runs out.
	waitFor(t, "the endpoint to be due after its lease ran out", func() bool {
		return slices.Contains(dEndpoints(t, s, 10), "ep")
	})
	waitFor(t, "another replica to claim the endpoint", func() bool {
		ok, err := s.ClaimEndpoint(ctx, "ep", "live-replica", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
}

func testDeliveryEndpointsDue(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	if eps := dEndpoints(t, s, 10); len(eps) != 0 {
		t.Fatalf("Endpoints of an empty store = %q", eps)
	}
	order := []string{"ep-c", "ep-a", "ep-b", "ep-d"}
	for i, ep := range order {
		dEnqueue(t, s, dNew(ep, "1", i))
		dEnqueue(t, s, dNew(ep, "2", i))
		// Due times are kept in milliseconds: let them differ.
		time.Sleep(3 * time.Millisecond)
	}
	if got := dEndpoints(t, s, 10); !slices.Equal(got, order) {
		t.Fatalf("Endpoints = %q, want most overdue first %q", got, order)
	}
	if got := dEndpoints(t, s, 2); !slices.Equal(got, order[:2]) {
		t.Fatalf("Endpoints(2) = %q, want %q", got, order[:2])
	}
	// A failed attempt releases the endpoint until its retry.
	if ok, err := s.ClaimEndpoint(ctx, "ep-c", "w", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.ReleaseEndpoint(ctx, "ep-c", "w", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A worker that yields releases it due now, behind what was due before.
	if ok, err := s.ClaimEndpoint(ctx, "ep-a", "w", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.ReleaseEndpoint(ctx, "ep-a", "w", time.Time{}); err != nil {
		t.Fatal(err)
	}
	// A new delivery does not make an endpoint waiting for a retry due.
	dEnqueue(t, s, dNew("ep-c", "3", 9))
	if got := dEndpoints(t, s, 10); !slices.Equal(got, []string{"ep-b", "ep-d", "ep-a"}) {
		t.Fatalf("Endpoints = %q, want ep-b ep-d ep-a", got)
	}
	// Drained endpoints leave the registry.
	dDrain(t, s, "ep-b")
	if got := dEndpoints(t, s, 10); !slices.Equal(got, []string{"ep-d", "ep-a"}) {
		t.Fatalf("Endpoints after draining ep-b = %q", got)
	}
	// Releasing a drained endpoint does not bring it back.
	if ok, err := s.ClaimEndpoint(ctx, "ep-b", "w", time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.ReleaseEndpoint(ctx, "ep-b", "w", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := dEndpoints(t, s, 10); slices.Contains(got, "ep-b") {
		t.Fatalf("a drained endpoint is due after its release: %q", got)
	}
}

func testDeliveryDepth(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	n, oldest, err := s.Backlog(ctx)
	if err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("Backlog of an empty store = %d, %s, %v", n, oldest, err)
	}
	enq := map[string][]int{"ep-a": {5, 6, 7}, "ep-b": {3, 9}, "ep-c": {4}}
	for ep, times := range enq {
		for i, at := range times {
			dEnqueue(t, s, dNew(ep, fmt.Sprint(i), at))
		}
	}
	for ep, times := range enq {
		n, oldest, err := s.Depth(ctx, ep)
		if err != nil || n != len(times) || !oldest.Equal(dTime(times[0])) {
			t.Errorf("Depth(%s) = %d, %s, %v; want %d, %s", ep, n, oldest, err, len(times), dTime(times[0]))
		}
	}
	if n, oldest, err := s.Backlog(ctx); err != nil || n != 6 || !oldest.Equal(dMillis(3)) {
		t.Fatalf("Backlog = %d, %s, %v; want 6, %s", n, oldest, err, dMillis(3))
	}
	dAck(t, s, "ep-b", "0")
	if n, oldest, err := s.Backlog(ctx); err != nil || n != 5 || !oldest.Equal(dMillis(4)) {
		t.Fatalf("Backlog after acking the oldest = %d, %s, %v; want 5, %s", n, oldest, err, dMillis(4))
	}
	if err := s.DeadLetter(ctx, "ep-c", "0", "r", nil); err != nil {
		t.Fatal(err)
	}
	if n, oldest, err := s.Backlog(ctx); err != nil || n != 4 || !oldest.Equal(dMillis(5)) {
		t.Fatalf("Backlog after a dead letter = %d, %s, %v; want 4, %s", n, oldest, err, dMillis(5))
	}
	for ep := range enq {
		dDrain(t, s, ep)
	}
	if n, oldest, err := s.Backlog(ctx); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("Backlog after draining = %d, %s, %v", n, oldest, err)
	}
	if n, oldest, err := s.Depth(ctx, "never-used"); err != nil || n != 0 || !oldest.IsZero() {
		t.Fatalf("Depth of an unknown endpoint = %d, %s, %v", n, oldest, err)
	}
}

func testDeliverySeparators(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	// Pairs that a careless key layout would merge.
	eps := []string{"a:b", "a", "a:b:c", "{a}", "a|b", "a%3Ab", "tenant/agent/task:1", "ü 1"}
	for i, ep := range eps {
		dEnqueue(t, s, dNew(ep, "x|y:z{1}%", i))
	}
	for _, ep := range eps {
		d, ok := dHead(t, s, ep)
		if !ok || d.Endpoint != ep || d.TaskID != "task-"+ep {
			t.Fatalf("Head(%q) = %+v, %v", ep, d, ok)
		}
		if n, _, _ := s.Depth(ctx, ep); n != 1 {
			t.Errorf("Depth(%q) = %d, want 1", ep, n)
		}
		if err := s.DeadLetter(ctx, ep, d.ID, "r", nil); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := dAllDeadLetters(t, s, 3)
	var got []string
	for _, dl := range all {
		got = append(got, dl.Endpoint)
		if dl.ID != "x|y:z{1}%" {
			t.Errorf("dead letter id = %q", dl.ID)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(eps))
	if !slices.Equal(got, want) {
		t.Fatalf("dead letter endpoints = %q, want %q", got, want)
	}
	if err := s.Redeliver(ctx, "a:b", "x|y:z{1}%"); err != nil {
		t.Fatal(err)
	}
	if ids := dDrain(t, s, "a:b"); len(ids) != 1 {
		t.Fatalf("a:b after redelivery = %q", ids)
	}
	for _, ep := range eps {
		if _, ok := dHead(t, s, ep); ok {
			t.Errorf("%q still holds a delivery", ep)
		}
	}
}

func testDeliveryArguments(t *testing.T, h harness) {
	s := h.delivery(t)
	ctx := context60(t)
	long := strings.Repeat("x", store.MaxNameBytes+1)
	bad := []struct {
		name string
		d    store.Delivery
	}{
		{"empty id", store.Delivery{Endpoint: "ep", TaskID: "t"}},
		{"empty endpoint", store.Delivery{ID: "i", TaskID: "t"}},
		{"empty task", store.Delivery{ID: "i", Endpoint: "ep"}},
		{"long id", store.Delivery{ID: long, Endpoint: "ep", TaskID: "t"}},
		{"huge payload", store.Delivery{ID: "i", Endpoint: "ep", TaskID: "t", Payload: make([]byte, store.MaxDeliveryPayloadBytes+1)}},
		{"time before 1970", store.Delivery{ID: "i", Endpoint: "ep", TaskID: "t", Enqueued: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	for _, tc := range bad {
		if _, err := EnqueueOne(ctx, s, tc.d); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Enqueue(%s): %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	checks := map[string]error{
		"Endpoints(0)":             func() error { _, err := s.Endpoints(ctx, 0); return err }(),
		"Endpoints(too many)":      func() error { _, err := s.Endpoints(ctx, store.MaxEndpointsPerCall+1); return err }(),
		"DeadLetters(0)":           func() error { _, _, err := s.DeadLetters(ctx, "", 0); return err }(),
		"Claim zero ttl":           func() error { _, err := s.ClaimEndpoint(ctx, "ep", "h", 0); return err }(),
		"Claim empty holder":       func() error { _, err := s.ClaimEndpoint(ctx, "ep", "", time.Second); return err }(),
		"Release empty holder":     s.ReleaseEndpoint(ctx, "ep", "", time.Time{}),
		"AckHead empty id":         func() error { _, err := s.AckHeads(ctx, "ep", []string{""}, "", 1); return err }(),
		"Head long endpoint":       func() error { _, _, _, err := ReadHead(ctx, s, long); return err }(),
		"Attempt negative latency": s.RecordAttempt(ctx, "ep", "i", store.Attempt{At: dTime(0), Latency: -1}),
		"Attempt bad status":       s.RecordAttempt(ctx, "ep", "i", store.Attempt{At: dTime(0), Status: 1000}),
		"Head empty endpoint":      func() error { _, _, _, err := ReadHead(ctx, s, ""); return err }(),
		"ClaimHead zero ttl":       func() error { _, _, _, _, err := s.ClaimHead(ctx, "ep", "h", 0); return err }(),
		"AckHead long holder":      func() error { _, err := s.AckHeads(ctx, "ep", []string{"i"}, long, 1); return err }(),
		"AckHeads zero limit":      func() error { _, err := s.AckHeads(ctx, "ep", nil, "", 0); return err }(),
		"AckHeads limit too large": func() error { _, err := s.AckHeads(ctx, "ep", nil, "", store.MaxHeadsPerRead+1); return err }(),
		"AckHeads too many ids": func() error {
			_, err := s.AckHeads(ctx, "ep", make([]string, store.MaxHeadsPerRead+1), "", 1)
			return err
		}(),
		"EnqueueClaim no holder": func() error {
			_, _, _, _, err := s.EnqueueClaim(ctx, dNew("ep", "i", 0), "", time.Second)
			return err
		}(),
	}
	for name, err := range checks {
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := s.Redeliver(ctx, "ep", "nothing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Redeliver of nothing: %v, want ErrNotFound", err)
	}
	if _, ok, err := s.GetDeadLetter(ctx, "ep", "nothing"); err != nil || ok {
		t.Errorf("GetDeadLetter of nothing = %v, %v", ok, err)
	}
}

func testDeliveryClosed(t *testing.T, h harness) {
	st := h.open(t, time.Hour)
	s := st.Delivery()
	ctx := context60(t)
	dEnqueue(t, s, dNew("ep", "a", 0))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func(context.Context) error{
		"Enqueue":       func(ctx context.Context) error { _, err := EnqueueOne(ctx, s, dNew("ep", "b", 0)); return err },
		"DeadLetter":    func(ctx context.Context) error { return s.DeadLetter(ctx, "ep", "a", "r", nil) },
		"RecordAttempt": func(ctx context.Context) error { return s.RecordAttempt(ctx, "ep", "a", dAttempt(0, false)) },
		"Endpoints":     func(ctx context.Context) error { _, err := s.Endpoints(ctx, 1); return err },
		"Depth":         func(ctx context.Context) error { _, _, err := s.Depth(ctx, "ep"); return err },
		"Backlog":       func(ctx context.Context) error { _, _, err := s.Backlog(ctx); return err },
		"DeadLetters":   func(ctx context.Context) error { _, _, err := s.DeadLetters(ctx, "", 1); return err },
		"GetDeadLetter": func(ctx context.Context) error { _, _, err := s.GetDeadLetter(ctx, "ep", "a"); return err },
		"Redeliver":     func(ctx context.Context) error { return s.Redeliver(ctx, "ep", "a") },
		"Disable":       func(ctx context.Context) error { _, err := s.DisableEndpoint(ctx, "ep", "r"); return err },
		"Claim":         func(ctx context.Context) error { _, err := s.ClaimEndpoint(ctx, "ep", "h", time.Second); return err },
		"Release":       func(ctx context.Context) error { return s.ReleaseEndpoint(ctx, "ep", "h", time.Time{}) },
		"Head":          func(ctx context.Context) error { _, _, _, err := ReadHead(ctx, s, "ep"); return err },
		"ClaimHead": func(ctx context.Context) error {
			_, _, _, _, err := s.ClaimHead(ctx, "ep", "h", time.Second)
			return err
		},
		"AckHead": func(ctx context.Context) error { _, err := s.AckHeads(ctx, "ep", []string{"a"}, "h", 1); return err },
		"EnqueueAll": func(ctx context.Context) error {
			_, errs := s.EnqueueAll(ctx, []store.Delivery{dNew("ep", "b", 0)})
			return errs[0]
		},
		"EnqueueClaim": func(ctx context.Context) error {
			_, _, _, _, err := s.EnqueueClaim(ctx, dNew("ep", "b", 0), "h", time.Second)
			return err
		},
	}
	for name, op := range ops {
		if err := op(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want ErrUnavailable", name, err)
		}
	}
}

// ReadHead reads the head of ep's queue and its attempt log.
func ReadHead(ctx context.Context, s store.DeliveryStore, ep string) (store.Delivery, []store.Attempt, bool, error) {
	next, err := s.AckHeads(ctx, ep, nil, "", 1)
	if err != nil || len(next) == 0 {
		return store.Delivery{}, nil, false, err
	}
	return next[0].Delivery, next[0].Attempts, true, nil
}

// EnqueueOne enqueues d alone.
func EnqueueOne(ctx context.Context, s store.DeliveryStore, d store.Delivery) (bool, error) {
	queued, errs := s.EnqueueAll(ctx, []store.Delivery{d})
	return queued[0], errs[0]
}
