#!/usr/bin/env bash
# Install the Debian 12 packages mxq needs to build and test.  Only calls apt-get when
# something is missing, so re-runs are fast.  Shared by scripts/*.sh and .ci/run.
set -euo pipefail

PKGS=(
  cmake g++ ninja-build
  googletest libgtest-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel
  clang libclang-rt-14-dev
)

missing=()
for p in "${PKGS[@]}"; do
  # dpkg -s succeeds for removed-but-configured packages too, so check the status line.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install_deps: all packages present"
  exit 0
fi

SUDO=()
if [[ $(id -u) -ne 0 ]]; then SUDO=(sudo); fi
echo "install_deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
