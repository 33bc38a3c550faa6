package config

import (
	"fmt"
	"math"

	"github.com/a2a-gateway/a2a-gateway/internal/duration"
)

// BudgetLimits is one tenant's budget. Zero fields are unlimited.
type BudgetLimits struct {
	// Rate is the sustained request rate, per second.
	Rate float64 `yaml:"rate"`
	// Burst is how many requests may arrive at once above the rate.
	// Default: Rate rounded up, at least 1.
	Burst int `yaml:"burst"`
	// MaxStreams caps the tenant's concurrently open streams.
	MaxStreams int `yaml:"max_streams"`
	// MaxActiveTasks caps the tenant's tasks that have not reached a
	// terminal state, across all replicas (counted in the store). A send
	// that would start another task is refused.
	MaxActiveTasks int `yaml:"max_active_tasks"`
}

// BudgetOptions is the `budgets:` section: per-tenant request and stream
// budgets, enforced by package budget.
type BudgetOptions struct {
	// Default applies to every tenant without an entry in Tenants.
	Default BudgetLimits `yaml:"default"`
	// Tenants overrides the default per tenant name.
	Tenants map[string]BudgetLimits `yaml:"tenants"`
	// ActiveTaskWindow is how long a task without any activity still counts
	// against max_active_tasks, so tasks an agent abandoned do not hold the
	// budget forever. Default 24h.
	ActiveTaskWindow duration.Duration `yaml:"active_task_window"`
}

// TracksActiveTasks reports whether any tenant has a cap on active tasks,
// so that task states need counting at all.
func (o *BudgetOptions) TracksActiveTasks() bool {
	if o.Default.MaxActiveTasks > 0 {
		return true
	}
	for _, l := range o.Tenants {
		if l.MaxActiveTasks > 0 {
			return true
		}
	}
	return false
}

// Validate checks the options; errors name the field.
func (o *BudgetOptions) Validate() error {
	check := func(field string, l BudgetLimits) error {
		if l.Rate < 0 || math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
			return fmt.Errorf("%s.rate: must be a non-negative number", field)
		}
		if l.Burst < 0 || l.MaxStreams < 0 || l.MaxActiveTasks < 0 {
			return fmt.Errorf("%s: burst, max_streams and max_active_tasks must not be negative", field)
		}
		return nil
	}
	if err := check("budgets.default", o.Default); err != nil {
		return err
	}
	for name, l := range o.Tenants {
		if err := check("budgets.tenants."+name, l); err != nil {
			return err
		}
	}
	return nil
}
