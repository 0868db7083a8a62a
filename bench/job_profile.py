#!/usr/bin/env python3
"""Where one stack job's time goes, variant by variant, from the process's
own clock and its run.json: start to exit, each stage, each searcher's
reading, loading, search, refinement and waiting, and the smoothing
trial's two searches (and where its 1 px search stopped). Variants run in
turn, round after round (timed_rounds), so a drift of the machine falls on
all of them alike.

Usage: bench/job_profile.py CONFIG ROUNDS VARIANT...
  VARIANT: NAME or NAME:SPEC, SPEC a ';'-separated list of ENV=VALUE (an
  environment variable, e.g. OMP_NUM_THREADS=8), [table]key=value (a line
  added to that table of a copy of CONFIG; not a key CONFIG sets already,
  which TOML refuses) and bin=PATH (another binary); no SPEC runs CONFIG
  as it is. STACKALIGN names the binary (default build/stackalign);
  STACKALIGN_ARGS adds options to each run (e.g. "--backend cpu")."""
import json, os, re, shutil, subprocess, sys

from timed_rounds import spread, timed_rounds

def variant_config(config, name, edits):
    text = open(config).read()
    for table, line in edits:
        header = "[%s]" % table
        if header in text:
            text = text.replace(header, header + "\n" + line, 1)
        else:
            text += "\n%s\n%s\n" % (header, line)
    text = re.sub(r'(?m)^dir *=.*$', 'dir = "out_profile_%s"' % name, text)
    path = os.path.join(os.path.dirname(os.path.abspath(config)), "profile_%s.toml" % name)
    open(path, "w").write(text)
    return path, os.path.join(os.path.dirname(path), "out_profile_%s" % name)

def parse(spec):
    env, edits, binary = {}, [], None
    for part in filter(None, spec.split(";")):
        m = re.match(r"\[(\w+)\](.*)", part)
        if m:
            edits.append((m.group(1), m.group(2)))
        elif part.startswith("bin="):
            binary = os.path.abspath(part[4:])
        else:
            k, v = part.split("=", 1)
            env[k] = v
    return env, edits, binary

def main():
    config, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    binary = os.path.abspath(os.environ.get("STACKALIGN", "build/stackalign"))
    runs = {}
    for v in variants:
        name, _, spec = v.partition(":")
        env, edits, own = parse(spec)
        path, out = variant_config(config, name, edits)
        runs[name] = (env, path, out, own or binary)
    extra = os.environ.get("STACKALIGN_ARGS", "").split()

    def run(name):  # the variant's run.json (read within the timing: well under a millisecond)
        env, path, out, program = runs[name]
        done = subprocess.run([program, "run", "-q", *extra, path], env={**os.environ, **env}, capture_output=True,
                              text=True)
        if done.returncode:
            sys.exit("%s: exit %d: %s" % (name, done.returncode, done.stderr[-400:]))
        return json.load(open(os.path.join(out, "run.json")))

    try:
        rows = timed_rounds(rounds, list(runs), run)
    finally:  # the copies sit beside CONFIG (its relative paths hold there): none is left, even after a failure
        for _, path, out, _ in runs.values():
            os.remove(path)
            shutil.rmtree(out, ignore_errors=True)
    for name, got in rows.items():
        print("## %s: start to exit %s s, %d rounds" % (name, spread(w for w, _ in got), len(got)))
        for wall, j in got:
            s = j["seconds"]
            stages = " ".join("%s %.3f" % (k, v) for k, v in s.items() if v and k != "total")
            trial = j["plan"].get("refine_sigma_trial", {})
            said = "/".join("%.3f" % t for t in trial["seconds"]) if trial else "-"
            if trial.get("larger_smoothing_stopped"):
                said += " (1 px stopped after %d triplets)" % trial.get("larger_smoothing_triplets", 0)
            print("  %.3f | run %.3f | %s | trial %s" % (wall, s["total"], stages, said))
            for w in j["searchers"]:
                t = w["seconds"]
                print("      searcher %3d pairs %3d loads: wall %.3f reading %.3f loading %.3f search %.3f refine %.3f waiting %.3f"
                      % (w["pairs"], w["loads"], t["wall"], t["reading"], t["loading"], t["search"], t["refine"], t["waiting"]))

main()
