package store_test

import (
	"testing"
	"time"

	"github.com/a2a-gateway/a2a-gateway/internal/store"
)

func TestDefaultOptions(t *testing.T) {
	d := store.DefaultOptions()
	if d.KeyPrefix != "a2agw" || d.OwnershipTTL.D() != 720*time.Hour || d.RequestBudget.D() != 2*time.Second || d.Memory.MaxEntries != 1_000_000 ||
		d.Redis.DialTimeout.D() != 2*time.Second || d.Redis.ReadTimeout.D() != time.Second || d.Redis.WriteTimeout.D() != time.Second {
		t.Fatalf("DefaultOptions() = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
}
