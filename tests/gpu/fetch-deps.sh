#!/usr/bin/env bash
# Downloads (does not install) the Debian packages that a bare GPU machine may lack to build dptrain and its
# GPU tests: OpenBLAS, zlib headers and CMocka; and Fashion-MNIST (dataset-fashion-mnist, 31 MB), for the
# device check's training runs. Run it on a Debian machine with network access; it fills
# .gpu-deps/ (git-ignored through .git/info/exclude), which device-check.sh unpacks under /tmp when the
# machine it runs on lacks one of them. Carry .gpu-deps to the GPU machine with the working tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu-deps}
mkdir -p "$dir"
if [ -d .git ] && ! grep -qx "/$dir/" .git/info/exclude 2>/dev/null; then echo "/$dir/" >>.git/info/exclude; fi
(cd "$dir" && apt-get download libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 \
  zlib1g zlib1g-dev libcmocka0 libcmocka-dev dataset-fashion-mnist)
ls -l "$dir"
echo "carry '$dir' to the GPU machine; tests/gpu/device-check.sh uses it when a library is missing there"
