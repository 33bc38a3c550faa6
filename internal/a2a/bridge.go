package a2a

import "net/url"

// Bridging: a caller of one version and binding reaches an agent that
// speaks another. The request is classified in the caller's form and runs
// through the pipeline unchanged; at the end of it TranslateRequest spells
// it in the agent's form, and TranslateResult spells every answer and
// stream event back in the caller's, before the observers see it. A
// member with no equivalent on the other side is dropped or refused as the
// bridging table (docs/bridging.md) says; nothing is passed on half
// translated.
//
// Translation goes through one pivot, the 1.0 protobuf JSON that 1.0
// JSON-RPC params and results are, so each form is read into it and
// written from it once, by the tables in bridge_*.go. No other package
// spells a member name of the protocol.

// Form is how a request or an answer is spelled: a protocol version over a
// binding.
type Form struct {
	Version Version
	Binding Binding
}

// FormOf is the form op was classified in.
func FormOf(op *Operation) Form { return Form{Version: op.Version, Binding: op.Binding} }

func (f Form) String() string { return f.Version.String() + " over " + f.Binding.CardName() }

// CardName is the binding's name in agent cards (1.0 protocolBinding, 0.3
// transport) and in the configuration.
func (b Binding) CardName() string {
	switch b {
	case BindingREST:
		return "HTTP+JSON"
	case BindingGRPC:
		return "GRPC"
	}
	return "JSONRPC"
}

// ParseBindingName reads a binding's card name ("JSONRPC", "HTTP+JSON",
// "GRPC").
func ParseBindingName(s string) (Binding, bool) {
	for _, b := range []Binding{BindingJSONRPC, BindingREST, BindingGRPC} {
		if b.CardName() == s {
			return b, true
		}
	}
	return 0, false
}

// ParseVersionName reads "1.0" or "0.3" (the versions a bridge serves).
func ParseVersionName(s string) (Version, bool) {
	switch s {
	case "1.0":
		return V10, true
	case "0.3":
		return V03, true
	}
	return 0, false
}

// UpstreamRequest is a request as the agent's form spells it.
type UpstreamRequest struct {
	// HTTPMethod and Path are the REST request line: Path is below the
	// agent's rest_path, escaped, and Query its query. Empty for the other
	// bindings.
	HTTPMethod, Path string
	Query            url.Values
	// Body is the JSON-RPC request (JSON-RPC), the REST body (REST; nil
	// when the method has none) or the protobuf JSON of the request message
	// (gRPC), which grpcwire encodes.
	Body []byte
}

// dialect is one JSON spelling of the protocol's objects.
type dialect uint8

const (
	// dialect10 is 1.0 protobuf JSON, in every 1.0 binding (gRPC through
	// the protobuf JSON of its messages).
	dialect10 dialect = iota + 1
	// dialect03 is 0.3 JSON-RPC: kind-tagged objects, lower-case states.
	dialect03
	// dialect03Proto is 0.3 protobuf JSON: 0.3 HTTP+JSON, and 0.3 gRPC
	// through the protobuf JSON of its messages.
	dialect03Proto
)

// dialectOf is the dialect form f's objects are spelled in.
func dialectOf(f Form) dialect {
	switch {
	case f.Version == V10:
		return dialect10
	case f.Binding == BindingJSONRPC:
		return dialect03
	}
	return dialect03Proto
}

// objectKind names the protocol objects translated between dialects.
type objectKind uint8

const (
	objMessage objectKind = iota + 1
	objTask
	objStatusUpdate
	objArtifactUpdate
	objStatus
	objArtifact
	objPart
	// objFile is the file of a 0.3 file part (1.0 spells it on the part).
	objFile
	// objTaskPushConfig is a TaskPushNotificationConfig: the push config
	// of a task, as the push config methods take and answer it.
	objTaskPushConfig
	// objPushConfig is a 0.3 PushNotificationConfig (a send's push config,
	// and the config inside a 0.3 TaskPushNotificationConfig); 1.0 spells
	// it as a TaskPushNotificationConfig.
	objPushConfig
	objAuthentication
)
