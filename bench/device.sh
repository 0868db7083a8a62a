#!/usr/bin/env bash
# The GPU machine's one driver: `bash bench/device.sh TASK...` from the
# repository root there, with the .deps prefix carried
# (../shared/tools/device-prefix.sh .deps). Logs go to $OUT (the folder whose
# files come back); each task prints what it found. Tasks, in the order given:
#   check     build (sm_90); every test; compute-sanitizer memcheck and
#             racecheck over the GPU tests (TWINS: doctest -tc patterns,
#             default '*CUDA*'); the sample configs on cuda and cpu, whose
#             shifts.csv / matches.csv must be the same bytes; `bench gpu`
#   stages    `bench stages` (every job shape on cuda, cpu and auto;
#             STAGES_ARGS picks jobs) and each job's shifts.csv cuda == cpu
#   ab        this build against OLD_SRC's (a `git archive` of another commit,
#             unpacked): the golden jobs (bench/golden_outputs.py) on cuda
#             with both, then the `bench stages` JOBS (default "tilt
#             standard") on cuda, builds alternating, ROUNDS (2) times, and
#             whether shifts.csv and the aligned stack are the same
#   python    the Python module built for that machine's Python; the sample
#             configs by the module and by the CLI on cuda, compared as text;
#             its pytest suite where that Python has pytest
#   resident  the `bench stages` target jobs in one Python process
#             (bench/resident.py: the GPU started once) against a CLI process each
#   floor     what any GPU process pays there (bench/probes/cuda_start.cpp,
#             timed by bench/timeline.py) and the tilt job start to exit
#   profile   GPU time per kernel (Nsight Compute; the machine has no nsys)
#             for the `bench stages` jobs in PROFILE_JOBS (',' between
#             jobs; default "tilt"), their first PROFILE_KERNELS (3000) kernels
#   tilt      bench/tilt_accuracy.py on both backends (TILT_ARGS adds its
#             options): gauge-free error from the truth of simulated tilt
#             series, stackalign beside the reference; memcheck over the
#             tomography twins; racecheck over a whole small tilt job
#   acquisition  `bench stages acquisition` (61 x 4096^2 uint16, on
#             STAGES_BACKENDS, default cuda; alone and as a batch of 2), then
#             the job alone again beside each of ACQ_VARIANTS ('|' between
#             variants, ';' between a variant's TABLE.KEY = VALUE settings);
#             ACQ_JOB="acquisition k3": 5760 x 4092 frames instead
#   gpus      bench/multi_gpu.sh: batches of 8 series on one GPU and on all
#   memory    bench/peak_memory.sh: a series larger than the frame cache
# Example (one device call): bash bench/device.sh check stages
source bench/device_env.sh
[ $# -gt 0 ] || { sed -n '2,/^source/p' "$0" | sed '$d'; exit 2; }
exec > >(tee -a "$OUT/device.log") 2>&1  # the whole log comes back, whatever the caller keeps

# Runs CONFIG on cuda then cpu; says whether OUTPUT (under its output dir) is the same bytes.
same_on_both() {
  local config=$1 output=$2
  build/stackalign run -q --backend cuda "$config" && cp "$output" /tmp/cuda.out
  build/stackalign run -q --backend cpu "$config"
  cmp -s /tmp/cuda.out "$output" && echo "$(basename "$config"): $(basename "$output") identical on cuda and cpu" ||
    echo "$(basename "$config"): $(basename "$output") DIFFERS between cuda and cpu"
}

sanitize() {
  local tool=$1 pattern=$2
  timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 build/tests -tc="$pattern" >"$OUT/$tool.log" 2>&1
  local rc=$?
  # A timed-out sanitizer can leave its test process running, and it would
  # slow every timing that follows (a `bench gpu` after a timed-out racecheck
  # gave the CPU standard job 52.7 s; 5.25 s on a fresh machine).
  pkill -f "^build/tests -tc=" 2>/dev/null  # anchored: not a shell whose command names it
  echo "$tool rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1) $(tail -1 "$OUT/$tool.log")"
}

task_check() {
  device_build build/stackalign build/tests build/bench
  run_tests
  sanitize memcheck "${TWINS:-*CUDA*}"
  sanitize racecheck "${TWINS:-*CUDA*}"
  same_on_both configs/sample_tilt_series.toml out/sample_tilt_series/shifts.csv
  same_on_both configs/sample_timelapse.toml out/sample_timelapse/shifts.csv
  same_on_both configs/sample_landmarks.toml out/sample_landmarks/matches.csv
  echo "== bench gpu"; build/bench gpu 2>&1 | tee "$OUT/bench_gpu.md" | tail -20
}

task_stages() {
  device_build build/stackalign build/bench
  echo "== bench stages"
  build/bench stages ${STAGES_ARGS:-} 2>&1 | tee "$OUT/stages.md" | grep -vE "^\s*$"
  for cuda in build/bench-stages/out_*_cuda; do
    [ -f "$cuda/shifts.csv" ] || continue
    cmp -s "$cuda/shifts.csv" "${cuda%_cuda}_cpu/shifts.csv" && echo "$(basename "$cuda"): shifts.csv identical on cpu" ||
      echo "$(basename "$cuda"): shifts.csv DIFFERS from cpu"
  done
}

# An aligned stack's pixels (a TIFF's through tifffile, so its strip layout does not count).
pixels_md5() {
  python3 -c "import hashlib, sys, tifffile; print(hashlib.md5(tifffile.imread(sys.argv[1]).tobytes()).hexdigest())" "$1" 2>/dev/null ||
    md5sum <"$1"
}

task_ab() {
  OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
  build_with_old
  local old=$PWD/$OLD_SRC/build/stackalign
  echo "== golden outputs on cuda, both builds"
  python3 bench/golden_outputs.py run "$old" /tmp/golden_old --backend cuda >"$OUT/golden_old.log" 2>&1
  python3 bench/golden_outputs.py run build/stackalign /tmp/golden_new --backend cuda >"$OUT/golden_new.log" 2>&1
  python3 bench/golden_outputs.py diff /tmp/golden_old /tmp/golden_new | tail -5
  for job in ${JOBS:-tilt standard}; do
    for r in $(seq "${ROUNDS:-2}"); do
      for tag in new old; do
        local bin=$PWD/build/stackalign; [ $tag = old ] && bin=$old
        echo "-- $job, $tag build, round $r"
        STAGES_BACKENDS=cuda STACKALIGN=$bin build/bench stages "$job" 2>&1 | stage_rows
        cp build/bench-stages/out_${job}*_cuda/shifts.csv "/tmp/${job}_$tag.csv"
        pixels_md5 build/bench-stages/out_${job}*_cuda/aligned.* >"/tmp/${job}_$tag.md5"
      done
    done
    cmp -s "/tmp/${job}_new.csv" "/tmp/${job}_old.csv" && echo "$job: shifts.csv the same in both builds" ||
      echo "$job: shifts.csv DIFFERS between the builds"
    cmp -s "/tmp/${job}_new.md5" "/tmp/${job}_old.md5" && echo "$job: aligned stack the same in both builds" ||
      echo "$job: aligned stack DIFFERS between the builds"
  done
}

task_python() {
  local py; py=$(command -v python3)
  "$py" --version
  device_build PYTHON="$py" build/stackalign python
  build/stackalign run -q --backend cuda configs/sample_timelapse.toml
  build/stackalign run -q --backend cuda configs/sample_landmarks.toml
  PYTHONPATH=build/python "$py" bench/module_equals_cli.py cuda
  if "$py" -c "import pytest" 2>/dev/null; then
    PYTHONPATH=build/python STACKALIGN_CLI=build/stackalign "$py" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tail -3
  else
    echo "no pytest in this Python: the suite ran on the CPU machine only"
  fi
}

task_resident() {
  device_build PYTHON="$(command -v python3)" build/stackalign build/bench python
  STAGES_BACKENDS=cuda build/bench stages tilt standard xray >/dev/null 2>&1
  local configs; configs=$(ls build/bench-stages/{tilt,standard,xray}*_cuda.toml)
  PYTHONPATH=build/python python3 bench/resident.py "${ROUNDS:-6}" $configs
  python3 bench/resident.py --cli build/stackalign "${ROUNDS:-6}" $configs
}

task_floor() {
  mkdir -p build
  g++ -O2 -o build/cuda_start bench/probes/cuda_start.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart || return 1
  for steps in i ic icm icmr; do echo "== $steps, driver's default queues"; python3 bench/timeline.py build/cuda_start $steps; done
  for c in 1 2 8; do
    echo "== ic, CUDA_DEVICE_MAX_CONNECTIONS=$c"; CUDA_DEVICE_MAX_CONNECTIONS=$c python3 bench/timeline.py build/cuda_start ic
  done
  device_build build/stackalign build/bench
  STAGES_BACKENDS=cuda build/bench stages tilt >/dev/null 2>&1
  for r in 1 2 3; do
    sync; /usr/bin/time -f "tilt, cuda, start to exit: %e s" build/stackalign run -q build/bench-stages/tilt_cuda.toml
  done
}

task_profile() {
  device_build build/stackalign build/bench
  local jobs job; IFS=, read -ra jobs <<< "${PROFILE_JOBS:-tilt}"  # job names may hold spaces ("acquisition k3")
  for job in "${jobs[@]}"; do
    STAGES_BACKENDS=cuda build/bench stages "$job" 2>&1 | stage_rows
    local tag=${job%% *} toml; toml=$(ls build/bench-stages/${tag}*_cuda.toml | grep -v batch | head -1)
    timeout 400 ncu --clock-control none ${KERNELS:+--kernel-name "regex:$KERNELS"} --metrics gpu__time_duration.sum --csv \
      -c "${PROFILE_KERNELS:-3000}" build/stackalign run -q "$toml" >"$OUT/ncu_$tag.csv" 2>"$OUT/ncu_$tag.err"
    echo "ncu rc=$?"
    python3 bench/kernel_times.py "$OUT/ncu_$tag.csv"
  done
}

# racecheck over a whole tilt job (a 61-view, 128-px slab: tracks, slab fit,
# projection matching), each kernel with shared memory it runs instrumented
# alone: the whole job under racecheck, even without the MI histogram
# kernels, ran past 150 s on an H100; the four runs here, with the build,
# took 113 s. The projection kernels (kernels/tomo) use no shared memory,
# so racecheck has nothing of theirs to check; memcheck does.
tilt_racecheck() {
  local dir=build/tilt-racecheck kernel rc
  mkdir -p "$dir"
  python3 - "$dir" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "bench")
import tilt_accuracy
d = Path(sys.argv[1])
stack, angles, _ = tilt_accuracy.simulated("slab", 0.0, 128, 1000, 3.0, 7, views=61)
tilt_accuracy.write_series(d, stack, angles)
(d / "job.toml").write_text('[input]\nstack = "series.mrc"\nangles = "series.tlt"\n[search]\nmax_shift = 10\n'
                            '[output]\ndir = "out"\naligned = false\n[device]\nbackend = "cuda"\n')
PY
  for kernel in track_kernel group_sums parzen hist_; do
    rm -rf "$dir/out"
    (cd "$dir" && timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=$kernel \
      ../../build/stackalign run -q job.toml) >"$OUT/racecheck_tilt_$kernel.log" 2>&1
    rc=$?
    pkill -f "^\.\./\.\./build/stackalign run -q job.toml" 2>/dev/null  # anchored, as in sanitize()
    echo "racecheck, the tilt job's kernels named *$kernel*: rc=$rc $(grep 'RACECHECK SUMMARY' "$OUT/racecheck_tilt_$kernel.log")"
  done
}

task_tilt() {
  device_build build/stackalign build/tests
  sanitize memcheck "${TWINS:-tomo*,projection matching*}"
  tilt_racecheck
  python3 bench/tilt_accuracy.py --backends cuda cpu --cache build/tilt-cache ${TILT_ARGS:-} 2>&1 | tee "$OUT/tilt_accuracy.md"
}

task_acquisition() {
  device_build build/stackalign build/bench
  STAGES_BACKENDS=${STAGES_BACKENDS:-cuda} STAGES_BATCH=${STAGES_BATCH:-2} build/bench stages "${ACQ_JOB:-acquisition}"
  echo "| variant | wall s | preprocess | search | refine | projection matching | write | total | peak MB | blocks | stretch |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  python3 - build/bench-stages "${ACQ_VARIANTS:-}" <<'PY'
import json, re, subprocess, sys, time
from pathlib import Path
folder, variants = Path(sys.argv[1]), [""] + [v for v in sys.argv[2].split("|") if v.strip()]
base = (folder / "acquisition_cuda.toml").read_text()
for n, variant in enumerate(variants):
    text = base.replace('dir = "out_acquisition_cuda"', f'dir = "out_variant{n}"')
    for setting in filter(str.strip, variant.split(";")):
        key, value = (p.strip() for p in setting.split("=", 1))
        table, name = key.split(".")
        if f"[{table}]\n" in text:  # set in the table, in place of the job's own value
            head = text.index(f"[{table}]\n") + len(f"[{table}]\n")
            end = text.find("\n[", head) + 1 or len(text)
            body = "".join(l for l in text[head:end].splitlines(True) if not l.startswith(f"{name} ="))
            text = text[:head] + f"{name} = {value}\n" + body + text[end:]
        else:
            text += f"\n[{table}]\n{name} = {value}\n"
    (folder / f"variant{n}.toml").write_text(text)
    t = time.perf_counter()
    if subprocess.run(["build/stackalign", "run", "-q", str(folder / f"variant{n}.toml")]).returncode:
        print(f"| {variant or 'defaults'} | failed |"); continue
    wall = time.perf_counter() - t
    j = json.load(open(folder / f"out_variant{n}/run.json")); s = j["seconds"]
    print(f"| {variant or 'defaults'} | {wall:.2f} | " + " | ".join(f"{s[k]:.2f}" for k in
          ("preprocess", "search", "refine", "projection_matching", "write", "total")) +
          f" | {j['peak_memory_mb']:.0f} | {j['plan']['coarse_block']} | {j['plan']['cosine_stretch_chosen_by'][:48]} |", flush=True)
PY
}

task_gpus() { device_build build/stackalign; bash bench/multi_gpu.sh; }
task_memory() { device_build build/stackalign; bash bench/peak_memory.sh "${BACKEND:-auto}"; }

for task in "$@"; do
  echo "==== $task"
  case $task in
    check|stages|ab|python|resident|floor|profile|tilt|acquisition|gpus|memory) "task_$task" ;;
    *) echo "unknown task '$task' (bash bench/device.sh with no task lists them)"; exit 2 ;;
  esac
done
