# Sourced by the bench/*_device.sh scripts on the GPU machine (run there
# from the repository root): strict mode, $OUT (the folder whose files come
# back), the .deps prefix's libraries (../shared/tools/device-prefix.sh),
# the GPU named in $OUT/gpu.txt, and
#   device_build [VAR=value ...] TARGET ...   made for sm_90 (MAKE_JOBS, 16),
#   the log in $OUT/build.log; on failure its tail, and exit 1.
set -uo pipefail
OUT=${OUT:-build/device-out}
mkdir -p "$OUT"
deps=$PWD/.deps
export LD_LIBRARY_PATH=$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
device_build() {
  make -j"${MAKE_JOBS:-16}" DEPS="$deps" CUDA_ARCHS=90 "$@" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
}
