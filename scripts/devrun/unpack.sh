#!/usr/bin/env bash
# On the GPU machine, first thing in a device call: restores every staged bundle's *.xz files
# (bundle.sh compresses files over 1 MiB) and prints the card, so the log says which one ran.
#   bash scripts/devrun/unpack.sh
# shellcheck source=scripts/devrun/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
find .devrun -type f -name '*.xz' -print0 2>/dev/null | xargs -0 -r xz -d -T0 -f
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
