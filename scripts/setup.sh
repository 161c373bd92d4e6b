#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine, offline except for the package
# registries: cmake and the simde headers for the QuickJS backend's WebAssembly interpreter
# (CMake is pointed at /usr/include by cmake/toolchain.cmake via .cargo/config.toml).
set -euo pipefail

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
[ -f /usr/include/simde/x86/sse2.h ] || need+=(libsimde-dev)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "setup: missing ${need[*]}. Install them first, e.g.: sudo apt-get install ${need[*]}" >&2
    exit 1
  fi
fi
