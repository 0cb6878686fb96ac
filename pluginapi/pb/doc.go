// Package pb holds the Go code generated from pluginapi/proto/*.proto by
// protoc-gen-go and protoc-gen-go-grpc (`make proto`), committed so that
// building needs no protoc. Edit the .proto files, never these; error.go
// alone is written by hand.
package pb
