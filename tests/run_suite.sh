#!/usr/bin/env bash
# `make test`: the C++ suite, then the Python module's pytest suite, with
# one summary line for both: "N passed, N failed".
# usage: tests/run_suite.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1
python=$2
cpp_log=$(mktemp)
py_log=$(mktemp)
trap 'rm -f "$cpp_log" "$py_log"' EXIT

"$build/tests" | tee "$cpp_log"
cpp_rc=${PIPESTATUS[0]}
read -r cpp_passed cpp_failed < <(tail -1 "$cpp_log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p')

echo "== Python module (pytest python/tests)"
PYTHONPATH="$build/python" STACKALIGN_CLI="$build/stackalign" \
  "$python" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tee "$py_log"
py_rc=${PIPESTATUS[0]}
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$py_log" | tail -1)
count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
py_passed=$(count passed)
py_failed=$(( $(count failed) + $(count error) ))
[ "$py_rc" -ne 0 ] && [ "$py_failed" -eq 0 ] && py_failed=1   # pytest could not run at all
py_skipped=$(count skipped)
[ "$py_skipped" -gt 0 ] && echo "$py_skipped Python tests skipped (see above)"

passed=$(( ${cpp_passed:-0} + py_passed ))
failed=$(( ${cpp_failed:-1} + py_failed ))
echo "$passed passed, $failed failed"
[ "$cpp_rc" -eq 0 ] && [ "$failed" -eq 0 ]
