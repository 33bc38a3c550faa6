// Package interop is the gateway's interoperability suite with the official
// A2A SDKs, as a matrix: every client of @a2a-js/sdk (A2A 1.0 and 0.3 over
// JSON-RPC, HTTP+JSON and gRPC) and of github.com/a2aproject/a2a-go (A2A 0.3
// over JSON-RPC and gRPC) against every agent of those SDKs serving one of
// those forms alone, through a real gateway process that bridges the two,
// with authorization and deduplication on. The results become RESULTS.md.
//
// Run it with ./interop/run.sh (after ./interop/setup.sh), or
// `cd interop && go test ./...`. README.md in this directory describes the
// cases, the filters for running part of the matrix, and how expected
// failures are recorded.
package interop
