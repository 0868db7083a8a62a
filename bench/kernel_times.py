"""GPU time per kernel from Nsight Compute's CSV (`ncu --metrics
gpu__time_duration.sum --csv`): the total, then the 25 costliest kernels
with their share, count and mean. usage: python3 bench/kernel_times.py NCU.csv
"""
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; name = head.index("Kernel Name"); unit = head.index("Metric Unit"); val = head.index("Metric Value")
total = collections.Counter(); count = collections.Counter()
for r in rows[1:]:
    if r[val] in ("", "n/a"): continue
    ns = float(r[val].replace(",", "")) * {"ns": 1, "us": 1e3, "ms": 1e6, "nsecond": 1, "usecond": 1e3, "msecond": 1e6}[r[unit]]
    # "void ns::<unnamed>::kernel<1>(args)" -> "ns::kernel": the anonymous
    # namespace's "<" had cut such names to their namespace.
    k = r[name].split("(")[0].replace("<unnamed>::", "").split("<")[0].removeprefix("void ")[-60:]
    total[k] += ns; count[k] += 1
s = sum(total.values())
print(f"  {sum(count.values())} kernels, {s/1e6:.1f} ms of GPU time")
for k, ns in total.most_common(25):
    print(f"  {ns/1e6:9.2f} ms {100*ns/s:5.1f} % {count[k]:6d} x {ns/count[k]/1e3:8.1f} us  {k}")
