package duration

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestUnmarshalYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: `d: 30s`, want: 30 * time.Second},
		{in: `d: "1m30s"`, want: 90 * time.Second},
		{in: `d: 720h`, want: 720 * time.Hour},
		{in: `d: 250ms`, want: 250 * time.Millisecond},
		{in: `d: 0s`, want: 0},
		{in: `d: 30`, wantErr: "want a duration"},
		{in: `d: 1.5`, wantErr: "want a duration"},
		{in: `d: soon`, wantErr: "want a duration"},
		{in: `d: -5s`, wantErr: "not negative"},
		{in: `d: [1s]`, wantErr: "want a duration"},
	}
	for _, tt := range tests {
		var v struct {
			D Duration `yaml:"d"`
		}
		err := yaml.Unmarshal([]byte(tt.in), &v)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Unmarshal(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v.D.D() != tt.want {
			t.Errorf("Unmarshal(%q) = %s, %v; want %s", tt.in, v.D.D(), err, tt.want)
		}
	}
}

func TestMarshalYAMLRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 90 * time.Second, 720 * time.Hour} {
		b, err := yaml.Marshal(map[string]Duration{"d": Duration(d)})
		if err != nil {
			t.Fatalf("Marshal(%s): %v", d, err)
		}
		var back map[string]Duration
		if err := yaml.Unmarshal(b, &back); err != nil || back["d"].D() != d {
			t.Errorf("round trip of %s via %q = %s, %v", d, b, back["d"].D(), err)
		}
	}
}

func TestOr(t *testing.T) {
	if got := Duration(0).Or(time.Minute); got != time.Minute {
		t.Errorf("Duration(0).Or(1m) = %s", got)
	}
	if got := Duration(time.Second).Or(time.Minute); got != time.Second {
		t.Errorf("Duration(1s).Or(1m) = %s", got)
	}
}
