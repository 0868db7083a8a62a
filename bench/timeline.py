#!/usr/bin/env python3
"""Runs a command and prints each line it writes to stderr with the seconds
since the command was started, then the seconds at its exit: where a
process's time goes before, between and after its own log lines (the CUDA
driver's start, a context's creation, the exit's release of the GPU).
Usage: bench/timeline.py COMMAND [ARGS...]"""
import subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, bufsize=1)
for line in p.stderr:
    print("%7.3f %s" % (time.perf_counter() - t0, line.rstrip()[:150]))
p.wait()
print("%7.3f exit %d" % (time.perf_counter() - t0, p.returncode))
