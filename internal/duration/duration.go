// Package duration provides a time.Duration that reads and writes Go
// duration strings ("30s", "24h") in YAML configuration.
package duration

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration spelled as a Go duration string in YAML.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML accepts "1m30s"-style strings; bare numbers are refused
// because their unit would be a guess.
//
// Errors are yaml.TypeErrors that carry the line, so the decoder goes on and
// reports every bad field of a file, not just the first.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!int" || n.Tag == "!!float" {
		return typeError(n, "want a duration such as \"30s\", got %q", n.Value)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return typeError(n, "want a duration such as \"30s\", got %q", n.Value)
	}
	if v < 0 {
		return typeError(n, "want a duration that is not negative, got %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// MarshalYAML writes the Go duration string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Or returns d, or def when d is zero: the one way defaults are applied.
func (d Duration) Or(def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return time.Duration(d)
}
