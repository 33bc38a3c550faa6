// Package interop is the gateway's interoperability suite with the official
// A2A SDKs: @a2a-js/sdk (agent and client, JSON-RPC and HTTP+JSON, A2A 1.0
// and 0.3) and github.com/a2aproject/a2a-go (agent and client, JSON-RPC,
// A2A 0.3). Every client talks to every agent through a real gateway
// process, with authorization and deduplication on, and the results become
// RESULTS.md.
//
// Run it with ./interop/run.sh (after ./interop/setup.sh), or
// `cd interop && go test ./...`. README.md in this directory describes the
// cases and how expected failures are recorded.
package interop
