package main

import (
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/a2a-gateway/a2a-gateway/internal/config"
	"github.com/a2a-gateway/a2a-gateway/internal/gateway"
)

// gatewayConfig validates a gateway configuration with the gateway's own
// loader, as `a2a-gateway check` would in a container whose environment is
// env, and checks that env provides every variable the configuration names
// in a *_env field: the loader verifies only some of them at load time,
// the rest fail when the gateway starts.
func gatewayConfig(raw []byte, env map[string]string) (*config.Config, error) {
	refs, err := envRefs(raw)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range refs {
		if _, ok := env[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the configuration names environment variables the container does not get: %s", strings.Join(missing, ", "))
	}
	restore := setEnv(refs, env)
	defer restore()
	cfg, err := config.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("gateway configuration: %w", err)
	}
	if err := cfg.Locate(gateway.Validate(cfg, config.ProcessEnv)); err != nil {
		return nil, fmt.Errorf("gateway configuration: %w", err)
	}
	return cfg, nil
}

// checkExampleConfig validates the documented example as `a2a-gateway
// check -skip-env` does: every field in it must be one the gateway accepts;
// the secrets it names are not at hand.
func checkExampleConfig(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	cfg, err := config.ParseEnv(raw, nil)
	if err != nil {
		return fmt.Errorf("gateway configuration: %w", err)
	}
	if err := cfg.Locate(gateway.Validate(cfg, nil)); err != nil {
		return fmt.Errorf("gateway configuration: %w", err)
	}
	return nil
}

// placeholderSecret stands in for secrets: long enough for every minimum
// the gateway enforces (API keys, ops token, HMAC secrets up to HS512).
const placeholderSecret = "placeholder-secret-0123456789abcdef-0123456789abcdef-0123456789"

// envRefs lists the values of every mapping key ending in "_env", anywhere
// in the document: the names of the environment variables it reads.
func envRefs(raw []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("gateway configuration: %w", err)
	}
	seen := map[string]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if strings.HasSuffix(k.Value, "_env") && v.Kind == yaml.ScalarNode && v.Value != "" {
					seen[v.Value] = true
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// setEnv sets (or unsets, when env lacks them) the named variables and
// returns a function that puts the process environment back.
func setEnv(names []string, env map[string]string) (restore func()) {
	type saved struct {
		v  string
		ok bool
	}
	old := map[string]saved{}
	for _, n := range names {
		v, ok := os.LookupEnv(n)
		old[n] = saved{v, ok}
		if nv, ok := env[n]; ok {
			os.Setenv(n, nv)
		} else {
			os.Unsetenv(n)
		}
	}
	return func() {
		for n, s := range old {
			if s.ok {
				os.Setenv(n, s.v)
			} else {
				os.Unsetenv(n)
			}
		}
	}
}

// listenPort returns the port of a listen address that accepts connections
// from outside its container or pod; a loopback listener there is
// unreachable by probes, Services and Prometheus.
func listenPort(field, addr string) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", field, addr, err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		return 0, fmt.Errorf("%s %q listens on %s only: nothing outside the container reaches it", field, addr, host)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", field, addr, err)
	}
	return port, nil
}
