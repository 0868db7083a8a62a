#!/usr/bin/env bash
# On the GPU machine: the floor of any GPU process there (bench/probes/
# cuda_start.cpp: the driver's start, a context, allocations, a reset, the
# exit, each timed by bench/timeline.py from the process's start), with the
# driver's work queues (CUDA_DEVICE_MAX_CONNECTIONS) at its default and at
# a few numbers. Usage there: bash bench/cuda_floor_device.sh (ROUNDS=1; build/stackalign built first adds a job's times)
source bench/device_env.sh
mkdir -p build
g++ -O2 -o build/cuda_start bench/probes/cuda_start.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart || exit 1
for r in $(seq "${ROUNDS:-1}"); do
  for steps in i ic icm icmr; do echo "== $steps, driver's default queues"; python3 bench/timeline.py build/cuda_start $steps; done
  for c in 1 2 4 8 32; do
    echo "== ic, CUDA_DEVICE_MAX_CONNECTIONS=$c"; CUDA_DEVICE_MAX_CONNECTIONS=$c python3 bench/timeline.py build/cuda_start ic
  done
done
# Beside another process that holds the driver (as `build/bench`, which asks
# for the device count, does while it times the CLI) or a context.
for hold in ih ich; do
  build/cuda_start $hold 2>/dev/null & holder=$!
  sleep 1.5
  for r in 1 2; do echo "== ic, another process ran '$hold' and holds it"; python3 bench/timeline.py build/cuda_start ic; done
  kill $holder; wait $holder 2>/dev/null
done
# A job's wall time from the CLI's start to its exit, alone: right after a
# `sync` (no earlier run's writeback left), and right after the last run.
if [ -x build/stackalign ]; then
  STAGES_BACKENDS=cuda build/bench stages tilt >/dev/null 2>&1
  for r in 1 2 3; do
    sync; /usr/bin/time -f "tilt, cuda, after sync: %e s" build/stackalign run -q build/bench-stages/tilt_cuda.toml
    /usr/bin/time -f "tilt, cuda, no sync: %e s" build/stackalign run -q build/bench-stages/tilt_cuda.toml
  done
  build/cuda_start ih 2>/dev/null & holder=$!
  sleep 1.5
  for r in 1 2 3; do
    sync; /usr/bin/time -f "tilt, cuda, after sync, the driver held by another process: %e s" build/stackalign run -q build/bench-stages/tilt_cuda.toml
  done
  kill $holder; wait $holder 2>/dev/null
fi
