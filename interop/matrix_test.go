package interop

import "github.com/a2a-gateway/a2a-gateway/interop/internal/report"

// The bindings and protocol versions as the table spells them.
const (
	jsonRPC  = "JSON-RPC"
	httpJSON = "HTTP+JSON"
	grpcName = "gRPC"
	v10      = "1.0"
	v03      = "0.3"
)

// SDK names; their versions are read from what is installed.
const (
	jsSDK = "@a2a-js/sdk"
	goSDK = "a2a-go"
)

// pairs is every client/agent combination the SDKs' versions allow, in
// table order. a2a-go v0.3 speaks only 0.3, over JSON-RPC and gRPC;
// @a2a-js/sdk speaks 1.0 and, with its compatibility layer, 0.3, over all
// three bindings.
func pairs(js, goSDKVersion report.SDK) []report.Pair {
	return []report.Pair{
		{Client: js, Agent: js, Binding: jsonRPC, Protocol: v10},
		{Client: js, Agent: js, Binding: httpJSON, Protocol: v10},
		{Client: js, Agent: js, Binding: grpcName, Protocol: v10},
		{Client: js, Agent: js, Binding: jsonRPC, Protocol: v03},
		{Client: js, Agent: js, Binding: httpJSON, Protocol: v03},
		{Client: js, Agent: js, Binding: grpcName, Protocol: v03},
		{Client: js, Agent: goSDKVersion, Binding: jsonRPC, Protocol: v03},
		{Client: js, Agent: goSDKVersion, Binding: grpcName, Protocol: v03},
		{Client: goSDKVersion, Agent: js, Binding: jsonRPC, Protocol: v03},
		{Client: goSDKVersion, Agent: js, Binding: grpcName, Protocol: v03},
		{Client: goSDKVersion, Agent: goSDKVersion, Binding: jsonRPC, Protocol: v03},
		{Client: goSDKVersion, Agent: goSDKVersion, Binding: grpcName, Protocol: v03},
	}
}

// marks lists every case allowed not to pass, with the reason: a quirk of
// an SDK version, never a gateway bug, which stays a failure until it is
// fixed. A mark that stops being needed fails the suite, so this list
// cannot go stale. It is empty: the one quirk the suite met, a2a-go
// v0.3.3's JSON-RPC server answering tasks/pushNotificationConfig/delete
// with HTTP 200 and an empty body, no longer shows through the gateway,
// which answers push-config operations itself (README.md, "Known SDK
// quirks").
var marks []report.Rule
