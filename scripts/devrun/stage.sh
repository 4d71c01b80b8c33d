#!/usr/bin/env bash
# Here (no GPU): builds the device binaries of the working tree and stages them as
# .devrun/NAME (git-ignored, carried to the GPU machine with carry [".devrun"]).
#   bash scripts/devrun/stage.sh NAME
#   SLIM=1 bash scripts/devrun/stage.sh NAME   (timing-only: without the GPU test binary and the
#                                              CLI, 9.2 instead of 10.9 MiB; ab.sh needs neither)
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
if [[ -n "${SLIM:-}" ]]; then
  rm -f ".devrun/${name}"/baracuda/bin/baracuda_gpu_tests* ".devrun/${name}"/baracuda/bin/baracuda.xz \
    ".devrun/${name}"/baracuda/bin/baracuda
fi
grep -q '^/.devrun/$' .gitignore || echo "stage.sh: warning: .devrun/ is not in .gitignore" >&2
echo "stage.sh: .devrun/${name}${SLIM:+ (slim)} ($(du -sh ".devrun/${name}" | cut -f1)); .devrun holds $(du -sh .devrun | cut -f1) (carry limit 64 MiB with the tree)"
