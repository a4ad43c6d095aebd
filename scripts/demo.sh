#!/usr/bin/env bash
# The main job: forecast a bundled dataset, print the forecast and plot it to forecast.png.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/tsrnn forecast --dataset air_passengers --horizon 24 --plot forecast.png "$@"
echo "plot written to $PWD/forecast.png"
