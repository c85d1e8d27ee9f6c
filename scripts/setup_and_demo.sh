#!/usr/bin/env bash
# Fresh Debian 12: install dependencies, build mxq into build/ (CMake preset `default`: the CUDA
# backend too when nvcc is installed), run the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh
cmake --preset default
cmake --build --preset default
./build/tools/cli/mxq demo
