#!/usr/bin/env bash
# The README's main-job command: installs dependencies, builds, and trains DeepFM
# on the embedded synthetic Criteo-shaped default (no external data needed).
# Extra arguments go to `ctrain train` (e.g. --epochs 2 --metrics-json m.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
exec ./build/ctrain train "$@"
