// Package store holds the state that gateway replicas share: which tenant
// owns each task and context (Ownership), the dedupe records of sends
// (Dedupe), each tenant's open tasks (ActiveTasks), the lifecycle record of
// every task with its indexes and leader leases (Lifecycle), and further
// concerns added in the same shape.
//
// # Shape of a concern
//
// Each concern is one small interface (Ownership in ownership.go, Dedupe in
// dedupe.go) with argument checks shared by every implementation, and two
// implementations:
//
//   - Redis (redis_ownership.go): a go-redis UniversalClient, so standalone,
//     Sentinel and Cluster deployments all work. The key layout is documented
//     at the top of the file; every operation is one round trip (a pipeline
//     or a script) except where a concern says otherwise (lifecycle Save
//     writes the record and then its indexes), and transport failures are
//     returned as ErrUnavailable.
//   - Memory (memory_ownership.go): mutex-protected maps with the same TTL
//     semantics, a bounded size and a sweep run by the store's janitor, for a
//     gateway running as a single replica.
//
// Store has one accessor per concern. It hands out the concern wrapped in
// its checked<Concern> (in <concern>.go), which refuses every call once the
// store is closed and runs the argument checks, once for both back ends
// (gate.check, store.go). checkedOwnership also implements RecordResolver,
// reading the record with the owners where the back end can.
// The conformance suite in internal/store/storetest runs the same cases against the memory store, a
// standalone redis-server, a Redis Cluster and a Sentinel deployment
// (conformance_test.go), so the two implementations cannot drift.
//
// To add a concern: define its interface, argument checks and checked
// wrapper in <concern>.go, add an accessor to Store, implement redis_<concern>.go (document its keys;
// build them with keyspace) and memory_<concern>.go (implement sweeper and
// register it in NewMemory), and add storetest.Run<Concern>, wired into
// conformance_test.go for every back end.
//
// # Scripts
//
// Steps that must be atomic are Lua scripts run with EVALSHA (go-redis
// falls back to EVAL when Redis lost its script cache), documented with
// their KEYS and ARGV; the delivery scripts, which read queue entries by
// position, name the places (deliveryPrelude). They are not loaded
// as a Redis Functions library: BenchmarkDeliveryScriptCalls measured FCALL
// against EVALSHA on a local redis-server 7 and found the same one round
// trip, a few microseconds less server CPU per read script and no clear
// difference for the writes, which does not pay for loading and versioning
// a library on every master, including each one added to a Cluster later.
//
// # Errors
//
// Arguments that break a documented limit fail with ErrInvalidArgument.
// When Redis cannot answer (connection refused, timeout, cluster down,
// failover in progress) the error satisfies errors.Is(err, ErrUnavailable),
// so callers can fail closed with "temporarily unavailable".
package store
