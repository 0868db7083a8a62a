#!/usr/bin/env bash
# On the GPU machine (issue #19): the target jobs run by one resident Python
# process (bench/resident.py: stackalign.run, the GPU started once) against
# the CLI started for each job, ROUNDS each, the CLI's rounds alternating
# between the jobs; then `auto` on the same jobs in a fresh process.
# Usage there: bash bench/resident_device.sh [build]   (ROUNDS=6)
#   "build" first builds stackalign, bench, tests and the module against this
#   machine's Python and its own pybind11 (3.x; Python 3.12 needs 2.11 or
#   newer, and the .deps prefix has Debian bookworm's 2.10).
source bench/device_env.sh
exec > >(tee -a "$OUT/resident.log") 2>&1
py=$(command -v python3)
if [ "${1:-}" = build ]; then
  "$py" -c "import pybind11; print('pybind11', pybind11.__version__)"
  device_build PYTHON="$py" build/stackalign build/bench build/tests python
fi
ROUNDS=${ROUNDS:-6}
# The jobs' data and configs (bench stages writes them, and times each once).
STAGES_BACKENDS=cuda build/bench stages tilt 2>&1 | stage_rows
STAGES_BACKENDS=cuda build/bench stages standard 2>&1 | stage_rows
STAGES_BACKENDS=cuda,cpu,auto build/bench stages X-ray 2>&1 | stage_rows
STAGES_BACKENDS=cuda,cpu,auto build/bench stages landmarks 2>&1 | stage_rows
d=build/bench-stages
# The real samples too (HAADF tilt series, Drosophila time-lapse), paths made absolute.
for name in sample_tilt_series sample_timelapse; do
  for b in cuda cpu auto; do
    sed -e "s|\.\./sample_data|$PWD/sample_data|" -e "s|^dir = .*|dir = \"out_${name}_$b\"|" \
        -e "s|^backend = .*|backend = \"$b\"|" "configs/$name.toml" >"$d/${name}_$b.toml"
  done
done
samples="$d/sample_tilt_series_cuda.toml $d/sample_tilt_series_cpu.toml $d/sample_tilt_series_auto.toml
  $d/sample_timelapse_cuda.toml $d/sample_timelapse_cpu.toml $d/sample_timelapse_auto.toml"
configs="$d/tilt_cuda.toml $d/standard_cuda.toml $d/X-ray-sized_cuda.toml $d/X-ray-sized_cpu.toml $d/X-ray-sized_auto.toml
  $d/landmarks_cuda.toml $d/landmarks_cpu.toml $d/landmarks_auto.toml"
echo "== the CLI"
"$py" bench/resident.py --cli build/stackalign "$ROUNDS" $configs $samples
echo "== one Python process, stackalign.run"
PYTHONPATH=build/python "$py" bench/resident.py "$ROUNDS" $configs $samples
echo "== one Python process, auto only: its first jobs on the CPU, the GPU started once they would have paid for it"
PYTHONPATH=build/python "$py" bench/resident.py "$ROUNDS" "$d/X-ray-sized_auto.toml" "$d/landmarks_auto.toml"
# the samples' auto in the first process, once warm: their choice there
for n in sample_tilt_series_auto sample_timelapse_auto; do
  "$py" -c "import json,sys; print(sys.argv[2], 'in the warm process:', json.load(open(sys.argv[1]))['plan']['backend_choice'])" "$d/out_$n/run.json" "$n"
done
PYTHONPATH=build/python "$py" - "$d/X-ray-sized_auto.toml" "$d/out_X-ray-sized_auto/run.json" <<'PY'
import json, sys, time, stackalign
print("a fresh session, X-ray-sized with auto, call by call:")
for k in range(1, 7):
    t = time.perf_counter()
    stackalign.run(sys.argv[1])
    plan = json.load(open(sys.argv[2]))["plan"]
    c = plan["backend_choice"]
    print(f"  call {k}: {time.perf_counter() - t:.3f} s, charged {c['cuda_start_seconds']:.3f} s of start,",
          f"estimated cpu {c['cpu_seconds_estimate']:.3f} / cuda {c['cuda_seconds_estimate']:.3f}, ran on", plan["backend"])
PY
