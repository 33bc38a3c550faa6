// Package layers holds no code: its test keeps the module's import graph
// pointing one way. Every package of the module has a layer, and imports
// (its tests' own imports aside) only packages of lower layers, plus the
// few edges within one layer that the test lists, each with its reason.
// The layers, lowest first:
//
//  0. leaves: the protocol model (internal/a2a), configuration
//     (internal/config), request-scoped values (internal/request), JOSE and
//     JCS (internal/jose), HTTP/1.1 client pools (internal/h1), metrics and
//     the other small helpers;
//  1. the store (internal/store and its conformance suite);
//  2. the pipeline core (proxy), which imports leaves only;
//  3. the stages: authorization, auth flows, cards, budgets, dedupe, push,
//     lifecycle tracking, ListTasks filtering;
//  4. what serves several stages together: push-config serving,
//     resumption and push sources (push/serve), card serving
//     (proxy/card/serve), the operations console;
//  5. assembly (internal/gateway) and the demo agent;
//  6. programs and test harnesses: cmd/*, bench, scaletest, internal/gwtest.
//
// A package new to the module fails the test until it is given a layer.
package layers
