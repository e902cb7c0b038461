#!/usr/bin/env bash
# Regenerates vendor/etcd-client/src/generated/*.rs: builds the crates.io release of
# etcd-client (the version in vendor/etcd-client/Cargo.toml) in a scratch crate, where
# its build.rs runs protoc, and copies the generated files over. Needs protoc and the
# well-known protos (Debian: protobuf-compiler libprotobuf-dev); metabench's own build
# does not. Review the diff afterwards and record the protoc version in
# vendor/etcd-client/README.metabench.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENDOR="$ROOT/vendor/etcd-client"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$VENDOR/Cargo.toml" | head -n 1)"
command -v protoc >/dev/null || { echo "regenerate-etcd-protos: needs protoc" >&2; exit 1; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/src"
printf '[package]\nname = "etcdgen"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\netcd-client = "=%s"\n' \
    "$VERSION" >"$SCRATCH/Cargo.toml"
echo 'fn main() {}' >"$SCRATCH/src/main.rs"
(cd "$SCRATCH" && cargo check --quiet)
OUT="$(ls -d "$SCRATCH"/target/debug/build/etcd-client-*/out | head -n 1)"
for p in authpb etcdserverpb mvccpb v3electionpb v3lockpb; do
    cp "$OUT/$p.rs" "$VENDOR/src/generated/$p.rs"
done
echo "regenerated etcd-client $VERSION's gRPC code with $(protoc --version)"
