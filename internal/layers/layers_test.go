package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/a2a-gateway/a2a-gateway"

// layer of every package of the module, by path below the module root.
var layer = map[string]int{
	"internal/a2a":                0,
	"internal/adminapi":           0,
	"internal/config":             0,
	"internal/duration":           0,
	"internal/grpcwire":           0,
	"internal/h1":                 0,
	"internal/jose":               0,
	"internal/layers":             0,
	"internal/pb/a2a03":           0,
	"internal/pb/a2a10":           0,
	"internal/redistest":          0,
	"internal/telemetry/otlptest": 0,
	"internal/request":            0,
	"internal/telemetry":          0,
	"internal/version":            0,
	"metrics":                     0,

	"internal/store":           1,
	"internal/store/storetest": 1,

	"proxy": 2,

	"authz":             3,
	"authz/flow":        3,
	"dedupe":            3,
	"metrics/lifecycle": 3,
	"proxy/budget":      3,
	"proxy/card":        3,
	"push":              3,

	"proxy/list": 3,

	"internal/console": 4,
	"proxy/card/serve": 4,
	"push/serve":       4,

	"internal/demoagent": 5,
	"internal/gateway":   5,

	"bench":              6,
	"bench/cmd/a2abench": 6,
	"cmd/a2a-gateway":    6,
	"cmd/demo-agent":     6,
	"docs":               6,
	"internal/gwtest":    6,
	"scaletest":          6,
}

// sameLayer are the only imports allowed between packages of one layer.
// Keep it short: an edge that no package uses any more fails the test.
var sameLayer = map[[2]string]string{
	{"internal/config", "internal/duration"}:       "durations are configuration values",
	{"internal/telemetry", "internal/version"}:     "spans and outbound requests name the running build",
	{"internal/request", "internal/a2a"}:           "a grant records the events of the protocol model",
	{"internal/grpcwire", "internal/a2a"}:          "a gRPC call is classified into the protocol model's operation",
	{"internal/grpcwire", "internal/pb/a2a10"}:     "the wire form of 1.0 calls is read against its generated schema",
	{"internal/grpcwire", "internal/pb/a2a03"}:     "the wire form of 0.3 calls is read against its generated schema",
	{"internal/store/storetest", "internal/store"}: "the conformance suite tests the store",
	{"authz/flow", "authz"}:                        "the challenge endpoints authenticate callers as the proxy does",
	{"authz/flow", "push"}:                         "an expired challenge is announced to the task's push consumers",
	{"bench/cmd/a2abench", "bench"}:                "the benchmark's command runs the benchmark",
}

// lowestOnly are packages held to imports of layer 0 alone, whatever their
// own layer: the pipeline core carries the stages' values without knowing
// the packages that produce them.
var lowestOnly = map[string]bool{"proxy": true}

// violations lists every import in graph (package → the module packages
// it imports, paths below the module root) that breaks the layering, and
// every package without a layer.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		from, ok := layer[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s has no layer: add it to the layer map in internal/layers/layers_test.go", pkg))
			continue
		}
		for _, imp := range imports {
			to, ok := layer[imp]
			switch {
			case !ok:
				// Reported as a package of its own.
			case to > from:
				out = append(out, fmt.Sprintf("%s (layer %d) imports %s (layer %d), a higher layer", pkg, from, imp, to))
			case lowestOnly[pkg] && to > 0:
				out = append(out, fmt.Sprintf("%s imports %s (layer %d): it may import only layer 0", pkg, imp, to))
			case to == from && sameLayer[[2]string{pkg, imp}] == "":
				out = append(out, fmt.Sprintf("%s imports %s of its own layer %d, which is not a listed edge", pkg, imp, from))
			}
		}
	}
	// A listed edge between two packages of the module that no longer
	// import each other is stale: the list says more than the code does.
	for edge := range sameLayer {
		imports, ok := graph[edge[0]]
		if _, both := graph[edge[1]]; ok && both && !slices.Contains(imports, edge[1]) {
			out = append(out, fmt.Sprintf("%s no longer imports %s: remove the edge from sameLayer", edge[0], edge[1]))
		}
	}
	slices.Sort(out)
	return out
}

// moduleGraph reads the module's packages and their imports (tests' own
// imports excluded) with go list.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		pkg, ok := below(p.ImportPath)
		if !ok {
			t.Fatalf("go list named %s, outside the module", p.ImportPath)
		}
		graph[pkg] = []string{}
		for _, imp := range p.Imports {
			if rel, ok := below(imp); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	return graph
}

func below(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

func TestImportsPointDown(t *testing.T) {
	graph := moduleGraph(t)
	for _, pkg := range []string{"internal/config", "proxy", "push", "internal/gateway"} {
		if _, ok := graph[pkg]; !ok {
			t.Fatalf("go list did not name %s: the graph is not the module's", pkg)
		}
	}
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestViolationsFound keeps the rule from passing vacuously: an upward
// import, an unlisted import within a layer, a package without a layer, a
// listed edge no package uses and the pipeline core importing the store
// are each reported, and a downward import is not.
func TestViolationsFound(t *testing.T) {
	got := violations(map[string][]string{
		"internal/config":  {"internal/store"},
		"proxy":            {"internal/a2a", "internal/store"},
		"push":             {"proxy/card"},
		"internal/unknown": {},
		"authz/flow":       {"authz"},
	})
	want := []string{
		"authz/flow no longer imports push: remove the edge from sameLayer",
		"internal/config (layer 0) imports internal/store (layer 1), a higher layer",
		"internal/unknown has no layer: add it to the layer map in internal/layers/layers_test.go",
		"proxy imports internal/store (layer 1): it may import only layer 0",
		"push imports proxy/card of its own layer 3, which is not a listed edge",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
