#!/usr/bin/env bash
# Fresh Debian 12: install dependencies, build mxq into build/, run the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh
export PATH="/usr/local/cuda/bin:${PATH}"   # let CMake find nvcc if the toolkit is installed

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
./build/tools/cli/mxq demo
