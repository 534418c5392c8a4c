#!/usr/bin/env bash
# Regenerates internal/nimbuspb from proto/. Needs protoc (Debian:
# apt-get install protobuf-compiler) and the two Go plugins:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
# The generated code is committed; building Gale does not need protoc.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(go env GOPATH)/bin:$PATH"
mkdir -p internal/nimbuspb
protoc -I proto \
  --go_out=. --go_opt=module=github.com/gale-stream/gale \
  --go-grpc_out=. --go-grpc_opt=module=github.com/gale-stream/gale \
  proto/gale/nimbus/v1/nimbus.proto
