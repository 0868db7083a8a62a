#!/usr/bin/env bash
# On the GPU machine's 16 cores: the CPU backend's coarse_to_fine = "auto"
# (its default, coarse to fine) against coarse_to_fine = false (every
# shift), on the `bench stages small` jobs, alternating, ROUNDS times, with
# run.json's stage seconds and whether shifts.csv is the same bytes; then
# `bench stages small` on every backend (what backend = "auto" chose).
source bench/device_env.sh
device_build build/stackalign build/bench
build/bench stages small 2>&1 | grep -E "^\| [a-zX]|auto vs"
cd build/bench-stages
for job in X-ray-sized drift; do
  sed 's/^\[output\]/[search]\ncoarse_to_fine = false\n[output]/; s/out_'$job'_cpu/out_'$job'_exhaustive/' ${job}_cpu.toml >${job}_exhaustive.toml
  for r in $(seq "${ROUNDS:-2}"); do
    for cfg in ${job}_cpu ${job}_exhaustive; do
      echo "$cfg: $(../stackalign run $cfg.toml 2>&1 | tail -1)"
    done
  done
  cmp -s out_${job}_cpu/shifts.csv out_${job}_exhaustive/shifts.csv && echo "$job: shifts.csv the same" || echo "$job: shifts.csv DIFFERS"
done
