export OUT; source bench/device_env.sh
device_build build/stackalign build/bench build/tests
run_tests
STAGES_BACKENDS=cuda build/bench stages "tilt series" > $OUT/stages.txt 2>&1; grep "^| tilt" $OUT/stages.txt
cd build/bench-stages
timed() {  # config label
  rm -rf "$(grep '^dir' $1 | cut -d'"' -f2)"; local s=$(date +%s%N); ../stackalign run -q $1; local e=$(date +%s%N)
  python3 -c "
import json,sys; d='$(grep '^dir' $1 | cut -d'"' -f2)'; r=json.load(open(d+'/run.json')); pm=r.get('projection_matching',{})
print('$2', 'wall %.3f'%(($e-$s)/1e9), 'total %.3f'%r['seconds']['total'], 'preprocess %.3f'%r['seconds']['preprocess'], 'tracks %.3f'%r['tilt_axis_tracks']['seconds'], 'pm %.3f'%r['seconds']['projection_matching'], 'thick', pm.get('thickness_seconds'), 'recon', [round(x,3) for x in pm.get('reconstruct_seconds',[])], 'match', [round(x,3) for x in pm.get('match_seconds',[])])"
}
for i in 1 2 3; do timed tilt_cuda.toml "tilt cuda"; done
sed 's/^\[alignment\]/[alignment]\nprojection_matching = true/; s/out_tilt_cuda/out_pm_cuda/' tilt_cuda.toml > pm_cuda.toml
grep -q projection_matching pm_cuda.toml || sed -i 's/^\[output\]/[alignment]\nprojection_matching = true\n[output]/' pm_cuda.toml
sed 's/"cuda"/"cpu"/; s/out_pm_cuda/out_pm_cpu/' pm_cuda.toml > pm_cpu.toml
for i in 1 2 3; do timed pm_cuda.toml "pm cuda"; done
for i in 1 2; do timed pm_cpu.toml "pm cpu"; done
cmp out_pm_cuda/shifts.csv out_pm_cpu/shifts.csv && echo "PM shifts.csv SAME on cuda and cpu"
cd ../..
timeout 400 compute-sanitizer --tool memcheck build/tests -tc='tomo*,projection matching*,tilt axis: with projection*' > $OUT/memcheck.log 2>&1; echo "memcheck rc=$?"; grep -E "ERROR SUMMARY" $OUT/memcheck.log | tail -1; tail -1 $OUT/memcheck.log
