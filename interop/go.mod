module github.com/a2a-gateway/a2a-gateway/interop

go 1.26.0

require (
	github.com/a2a-gateway/a2a-gateway v0.0.0
	github.com/a2aproject/a2a-go v0.3.3
	google.golang.org/grpc v1.83.2
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260928230214-8a89bd6388cc // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

// The suite tests the gateway in this checkout, and uses its protocol
// package to read webhook bodies.
replace github.com/a2a-gateway/a2a-gateway => ../
