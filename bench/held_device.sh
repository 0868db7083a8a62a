#!/usr/bin/env bash
# On the GPU machine (issue #19): numpy arrays aligned by one resident Python
# process (bench/held_arrays.py: stackalign.align_stack), this tree's module
# (the series and its aligned frames kept in memory) against $OLD_MODULE,
# an earlier tree's module source built against this library (one that
# wrote the array to a TIFF file, ran the job on it and read the aligned
# stack's file back), in processes taking turns; then the tests, the
# module's tests, and compute-sanitizer on the in-memory job.
# Usage there: OLD_MODULE=build/old-module.cpp bash bench/held_device.sh   (ROUNDS=5, TURNS=3)
#              bash bench/held_device.sh tests   (the builds already made: the tests only)
source bench/device_env.sh
exec > >(tee -a "$OUT/held.log") 2>&1
py=$(command -v python3)
if [ "${1:-}" = tests ]; then
  run_tests
  echo "== the module's tests"
  PYTHONPATH=build/python "$py" -m pytest -q python/tests 2>&1 | tail -3
  echo "== compute-sanitizer, the in-memory jobs"
  "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck \
    build/tests -tc='*held in memory*' 2>&1 | tail -4
  exit 0
fi
OLD_MODULE=${OLD_MODULE:?an earlier module source, e.g. build/old-module.cpp}
device_build PYTHON="$py" build/stackalign build/bench build/tests python
ext=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
device_build PYTHON="$py" PY_SOURCE="$OLD_MODULE" PY_MODULE="build/old-py/stackalign$ext" python
ROUNDS=${ROUNDS:-5}
TURNS=${TURNS:-3}
STAGES_BACKENDS=cuda build/bench stages tilt 2>&1 | stage_rows
STAGES_BACKENDS=cuda build/bench stages standard 2>&1 | stage_rows
STAGES_BACKENDS=cuda,cpu build/bench stages X-ray 2>&1 | stage_rows
d=build/bench-stages
configs="$d/tilt_cuda.toml $d/standard_cuda.toml $d/X-ray-sized_cuda.toml $d/X-ray-sized_cpu.toml"
for turn in $(seq "$TURNS"); do
  echo "== turn $turn: $OLD_MODULE (through files)"
  PYTHONPATH=build/old-py "$py" bench/held_arrays.py "$ROUNDS" $configs
  echo "== turn $turn: this tree's module (in memory)"
  PYTHONPATH=build/python "$py" bench/held_arrays.py "$ROUNDS" $configs
done
