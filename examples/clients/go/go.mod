// For building outside this repository with modules: generate the stubs into ./gen
// (protoc -I ../../../proto --go_out=gen --go_opt=module=kubestore.io/gen/go
//  --go-grpc_out=gen --go-grpc_opt=module=kubestore.io/gen/go meta/v1/meta.proto core/v1/core.proto),
// give gen a go.mod (`module kubestore.io/gen/go`), then `go mod tidy && go run .`.
// examples/clients/run.sh builds it offline instead, in GOPATH mode with Debian's Go packages.
module kubestore.io/examples/clients/go

go 1.19

replace kubestore.io/gen/go => ./gen
