package config

import (
	"math"
	"strings"
	"testing"
)

func TestBudgetValidate(t *testing.T) {
	cases := []struct {
		name    string
		opts    BudgetOptions
		wantErr string
	}{
		{"zero", BudgetOptions{}, ""},
		{"typical", BudgetOptions{Default: BudgetLimits{Rate: 10, Burst: 20, MaxStreams: 5}, Tenants: map[string]BudgetLimits{"big": {Rate: 100}}}, ""},
		{"negative rate", BudgetOptions{Default: BudgetLimits{Rate: -1}}, "budgets.default.rate"},
		{"NaN rate", BudgetOptions{Default: BudgetLimits{Rate: math.NaN()}}, "budgets.default.rate"},
		{"infinite rate", BudgetOptions{Default: BudgetLimits{Rate: math.Inf(1)}}, "budgets.default.rate"},
		{"negative burst", BudgetOptions{Default: BudgetLimits{Burst: -1}}, "budgets.default"},
		{"negative max_streams", BudgetOptions{Default: BudgetLimits{MaxStreams: -2}}, "budgets.default"},
		{"bad tenant", BudgetOptions{Tenants: map[string]BudgetLimits{"acme": {Rate: -0.5}}}, "budgets.tenants.acme.rate"},
		{"bad tenant streams", BudgetOptions{Tenants: map[string]BudgetLimits{"acme": {MaxStreams: -1}}}, "budgets.tenants.acme"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted; want an error naming %s", tc.wantErr)
			case tc.wantErr != "" && !strings.HasPrefix(err.Error(), tc.wantErr):
				t.Fatalf("error %q does not start with the field %s", err, tc.wantErr)
			}
		})
	}
}
