#!/usr/bin/env bash
# On the GPU machine's host: where CPU jobs' time goes, variant by variant
# (bench/job_profile.py): the `bench stages` jobs named in JOBS (their cpu
# configs) and the configs in CONFIGS (run with --backend cpu), with this
# build and, where OLD_SRC names another build's source tree, that one in
# the same rounds (each variant again as NAME-old), and then whether the
# two builds write the same shifts.csv
# (TESTS=1 also runs build/tests). The host's CPU first (lscpu).
# STACKALIGN_ARGS (e.g. "--backend cuda") is passed to the JOBS' runs;
# CONFIGS always run on the CPU.
# Usage there: JOBS="X-ray drift" CONFIGS="configs/sample_timelapse.toml" ROUNDS=8 \
#              bash bench/job_profile_device.sh VARIANT...   (as job_profile.py takes them)
source bench/device_env.sh
exec > >(tee "$OUT/job_profile.log") 2>&1
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|L2|L3)" || nproc
if [ -n "${OLD_SRC:-}" ]; then build_with_old; else MAKE_JOBS=16 device_build build/stackalign build/bench; fi
[ "${TESTS:-0}" = 1 ] && { [ -n "${OLD_SRC:-}" ] || device_build build/tests; run_tests; }
same_shifts() {  # config: this build's shifts.csv against OLD_SRC's, on the CPU
  local config=$1 out
  for tag in new old; do
    bin=build/stackalign; [ $tag = old ] && bin=$OLD_SRC/build/stackalign
    out=$(mktemp -d)
    sed "s#^dir *=.*#dir = \"$out\"#" "$config" >"${config%.toml}_$tag.toml"
    $bin run -q --backend cpu "${config%.toml}_$tag.toml" && cp "$out/shifts.csv" "/tmp/shifts_$tag.csv"
    rm -rf "$out" "${config%.toml}_$tag.toml"
  done
  cmp -s /tmp/shifts_new.csv /tmp/shifts_old.csv && echo "$config: shifts.csv the same in both builds" || echo "$config: shifts.csv DIFFERS between the builds"
}
profile() {  # config, then the variants (each also as NAME-old with OLD_SRC's binary, in the same rounds)
  local config=$1; shift
  local variants=("$@")
  [ ${#variants[@]} = 0 ] && variants=(default)
  if [ -n "${OLD_SRC:-}" ]; then
    for v in "${variants[@]}"; do
      name=${v%%:*}; spec=; [ "$name" != "$v" ] && spec=${v#*:}
      variants+=("$name-old:${spec:+$spec;}bin=$OLD_SRC/build/stackalign")
    done
  fi
  echo "== $config on $(nproc) threads"
  python3 bench/job_profile.py "$config" "${ROUNDS:-8}" "${variants[@]}"
  [ -n "${OLD_SRC:-}" ] && same_shifts "$config"
}
for job in ${JOBS-X-ray}; do
  STAGES_BACKENDS=cpu build/bench stages "$job" 2>&1 | stage_rows
  profile "$(ls build/bench-stages/${job}*_cpu.toml | head -1)" "$@"
done
for config in ${CONFIGS-}; do STACKALIGN_ARGS="--backend cpu" profile "$config" "$@"; done
