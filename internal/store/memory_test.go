package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestMemoryEvictsOldestAtCapacity(t *testing.T) {
	s := NewMemory(Options{Memory: MemoryOptions{MaxEntries: 3}})
	t.Cleanup(func() { _ = s.Close() })
	own := s.Ownership()
	ctx := context.Background()
	owner := Owner{Tenant: "acme"}
	for i := range 4 {
		if _, err := own.Claim(ctx, "agent", []Ref{{RefTask, fmt.Sprint(i)}}, owner); err != nil {
			t.Fatalf("Claim %d: %v", i, err)
		}
	}
	got, err := own.Lookup(ctx, "agent", []Ref{{RefTask, "0"}, {RefTask, "1"}, {RefTask, "2"}, {RefTask, "3"}})
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	want := []Owner{{}, owner, owner, owner}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("owner of %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := s.(*memoryStore).ownership.len(); n != 3 {
		t.Errorf("len = %d, want 3", n)
	}
}

func TestMemorySweepDropsExpiredOnly(t *testing.T) {
	m := newMemOwnership(time.Hour, 10)
	ctx := context.Background()
	if _, err := m.Claim(ctx, "agent", []Ref{{RefTask, "a"}, {RefContext, "a"}}, Owner{Tenant: "acme"}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	m.sweep(time.Now())
	if n := m.len(); n != 2 {
		t.Fatalf("after sweeping now: len = %d, want 2", n)
	}
	m.sweep(time.Now().Add(2 * time.Hour))
	if n := m.len(); n != 0 {
		t.Fatalf("after sweeping past the TTL: len = %d, want 0", n)
	}
}

func TestMemoryCloseStopsJanitor(t *testing.T) {
	s := NewMemory(Options{}).(*memoryStore)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-s.done:
	default:
		t.Fatal("janitor still running after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSweepInterval(t *testing.T) {
	tests := []struct{ ttl, want time.Duration }{
		{time.Millisecond, time.Second},
		{10 * time.Second, 5 * time.Second},
		{720 * time.Hour, time.Minute},
	}
	for _, tt := range tests {
		if got := sweepInterval(tt.ttl); got != tt.want {
			t.Errorf("sweepInterval(%s) = %s, want %s", tt.ttl, got, tt.want)
		}
	}
}

func TestConstructorsTolerateUnvalidatedOptions(t *testing.T) {
	s := NewMemory(Options{OwnershipTTL: -1, Memory: MemoryOptions{MaxEntries: -1}})
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.Ownership().Claim(context.Background(), "agent", []Ref{{RefTask, "t"}}, Owner{Tenant: "acme"})
	if err != nil || got[0].Tenant != "acme" {
		t.Fatalf("Claim = %v, %v", got, err)
	}
}

// The zero options take the documented defaults, and pass Validate.
func TestOptionsDefaults(t *testing.T) {
	d := withDefaults(Options{})
	if d.KeyPrefix != "a2agw" || d.OwnershipTTL.D() != 720*time.Hour || d.RequestBudget.D() != 2*time.Second || d.Memory.MaxEntries != 1_000_000 ||
		d.Redis.DialTimeout.D() != 2*time.Second || d.Redis.ReadTimeout.D() != time.Second || d.Redis.WriteTimeout.D() != time.Second {
		t.Fatalf("defaults = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
}

// len is the number of records held, expired or not.
func (m *memOwnership) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.recs.order.Len()
}
