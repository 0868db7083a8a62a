# Sourced by bench/device.sh on the GPU machine (run there from the
# repository root): strict mode, $OUT (the folder whose files come
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
# build_with_old: this tree's stackalign, bench and tests, and $OLD_SRC's
# stackalign beside them (its log in $OUT/build_old.log).
build_with_old() {
  (make -C "$OLD_SRC" -j8 DEPS="$deps" CUDA_ARCHS=90 build/stackalign >"$OUT/build_old.log" 2>&1 || echo "OLD BUILD FAILED") &
  local old=$!
  MAKE_JOBS=8 device_build build/stackalign build/bench build/tests
  wait $old  # not a bare wait: that would wait for a caller's log tee too
}
# run_tests: build/tests, its failures and its summary line (the log in $OUT/tests.log).
run_tests() {
  echo "== tests"; build/tests >"$OUT/tests.log" 2>&1; grep -E "ERROR|FAILED" "$OUT/tests.log" | head -20; tail -1 "$OUT/tests.log"
}
# stage_rows: the job rows of `bench stages`' table on stdin.
stage_rows() { grep -E "^\| [a-zX]" | grep -v "^| job"; }
