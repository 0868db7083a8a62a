#!/usr/bin/env bash
# On the GPU machine: the floor of any GPU process there (bench/probes/
# cuda_start.cpp: the driver's start, a context, allocations, a reset, the
# exit, each timed by bench/timeline.py from the process's start), with the
# driver's work queues (CUDA_DEVICE_MAX_CONNECTIONS) at its default and at
# a few numbers. Usage there: bash bench/cuda_floor_device.sh (ROUNDS=2)
source bench/device_env.sh
mkdir -p build
g++ -O2 -o build/cuda_start bench/probes/cuda_start.cpp -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcudart || exit 1
for r in $(seq "${ROUNDS:-2}"); do
  for steps in i ic icm icmr; do echo "== $steps, driver's default queues"; python3 bench/timeline.py build/cuda_start $steps; done
  for c in 1 2 4 8 32; do
    echo "== ic, CUDA_DEVICE_MAX_CONNECTIONS=$c"; CUDA_DEVICE_MAX_CONNECTIONS=$c python3 bench/timeline.py build/cuda_start ic
  done
done
