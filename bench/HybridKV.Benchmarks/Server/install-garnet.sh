#!/usr/bin/env bash
# Installs Garnet, the server benchmark's peer, as a .NET tool into a local tool path (never globally):
#   bench/HybridKV.Benchmarks/Server/install-garnet.sh [TOOL_PATH]
# The runner calls it when TOOL_PATH/garnet-server is missing. Version pinned to the one issue 23 measured.
set -euo pipefail
TOOL_PATH="${1:-$(cd "$(dirname "$0")/../../.." && pwd)/bench/.tools/garnet}"
VERSION="2.2.8"
if [ -x "$TOOL_PATH/garnet-server" ]; then
  echo "garnet-server already in $TOOL_PATH"
  exit 0
fi
mkdir -p "$TOOL_PATH"
dotnet tool install garnet-server --version "$VERSION" --tool-path "$TOOL_PATH"
