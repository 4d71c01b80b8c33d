#!/usr/bin/env bash
# Here (no GPU): builds the device binaries of the working tree and stages them as
# .devrun/NAME (git-ignored, carried to the GPU machine with carry [".devrun"]).
#   bash scripts/devrun/stage.sh NAME
# Several bundles side by side (about 11 MiB each) make A/B comparisons in one device call:
# stage the baseline, change the code, stage the variant. The tree that travels (tracked files
# + carried paths) must stay under 64 MiB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
name="${1:?usage: stage.sh NAME}"
BARACUDA_BUNDLE_QUICK=1 bash scripts/bundle.sh
rm -rf ".devrun/${name}"
mkdir -p .devrun
cp -r bundle ".devrun/${name}"
grep -q '^/.devrun/$' .gitignore || echo "stage.sh: warning: .devrun/ is not in .gitignore" >&2
echo "stage.sh: .devrun/${name} ($(du -sh ".devrun/${name}" | cut -f1)); .devrun holds $(du -sh .devrun | cut -f1)"
