#!/bin/sh
# Regenerates the committed *_pb2.py message classes with the system protoc
# (Debian 12: protobuf-compiler 3.21.12, matching python3-protobuf 3.21).
# Run from anywhere; no gRPC code generator is needed: the plugin registers
# its services with grpc's generic handlers.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
api=$here/../../pluginapi/proto
protoc -I "$api" --python_out="$here" "$api/workspace.proto" "$api/backend.proto"
protoc -I "$here" --python_out="$here" "$here/goplugin.proto" "$here/health.proto"
