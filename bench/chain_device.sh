#!/usr/bin/env bash
# On the GPU machine: what a stretched tilt series' pair stage waits on.
# The `bench stages` tilt job on cuda, then the same config run directly
# with one change at a time, ROUNDS times, alternating:
#   default           (searchers "auto": two chains, two skip searchers)
#   solve = "chain"   (no skip pairs: the chains alone on the GPU)
#   searchers = 2     (the chains take their skips between steps)
#   searchers = 1
#   OMP 4 threads     (each searcher's host loops on one thread)
# Each line: run.json's total and stages. Usage there: bash bench/chain_device.sh
source bench/device_env.sh
exec > >(tee "$OUT/chain.log") 2>&1
MAKE_JOBS=16 device_build build/stackalign build/bench
JOB=${JOB:-tilt}
STAGES_BACKENDS=cuda build/bench stages "$JOB" 2>&1 | stage_rows
cd build/bench-stages
base=$(ls ${JOB}*_cuda.toml | head -1)
variant() {  # name, then sed expressions
  local name=$1; shift
  sed "$@" "$base" | sed "s|^dir = .*|dir = \"out_variant\"|" >"variant_$name.toml"
}
variant default -e ''
variant chain -e 's|^\[alignment\]|[alignment]\nsolve = "chain"|'
variant searchers2 -e 's|^backend = "cuda"|backend = "cuda"\nsearchers = 2|'
variant searchers1 -e 's|^backend = "cuda"|backend = "cuda"\nsearchers = 1|'
for r in $(seq "${ROUNDS:-2}"); do
  for name in default chain searchers2 searchers1 omp4; do
    cfg=variant_$name.toml; env=()
    [ $name = omp4 ] && { cfg=variant_default.toml; env=(OMP_NUM_THREADS=4); }
    rm -rf out_variant; sync
    start=$(date +%s.%N)
    env "${env[@]}" ../stackalign run "$cfg" 2>&1 | grep -o "done in.*write [0-9.e-]*" | sed "s|^|$name r$r: |"
    echo "    wall $(python3 -c "print(round($(date +%s.%N) - $start, 3))") s; $(grep -o '"searchers": *[0-9]*' out_variant/run.json)"
  done
done
