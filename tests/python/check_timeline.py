#!/usr/bin/env python3
"""Check the timelines `train_digits --profile-dir` writes, with Python's json
module only: Chrome trace-event files whose spans must nest as the session
runs them.

It trains 300 steps with a trace every 100 steps, checkpoints, summaries
and early-stopping evaluations every 100 steps and the progress hook on, so
every kind of hook is in the session, then for each timeline-<N>.json:

  * the file is JSON with a "traceEvents" list; otherData.global_step and
    the one span of category "step", named "step <N>", say the step of its
    name; every complete ("X") event has a finite ts and a dur >= 0 and is
    on the training thread named by the thread_name metadata event;
  * every span of the step lies inside the step's span;
  * exactly one executor span ("executor.run"); every op span inside it, the
    ops one after another, the graph's "train" op among them;
  * hook spans are "<hook>.<callback>"; the before_run spans come one after
    another, in the session's hook order, and all end before the executor
    starts; the after_run spans start after it ends, one after another, in
    the same order. That order is the MonitoredTrainingSession's with
    train_digits' hooks: ProfilerHook first (its own before_run asks for
    the trace, so only its after_run is traced), the NaN guard and the
    EarlyStoppingHook before the MTS's StepCounter, SummarySaver and
    CheckpointSaver, then the program's feeder, StopAtStep and Progress
    hooks.

Times are written with 3 decimals (nanoseconds), so comparisons allow 2 ns.

Usage: check_timeline.py --train-digits EXE --workdir DIR
Exit status: 0 pass, 1 fail.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

EPS = 0.002  # microseconds: ts and dur are rounded to 0.001 each

# The session's dispatch order (C53): chief-only hooks, the MTS's defaults,
# the program's hooks.
HOOK_ORDER = [
    "ProfilerHook",
    "NanTensorHook",
    "EarlyStoppingHook",
    "StepCounterHook",
    "SummarySaverHook",
    "CheckpointSaverHook",
    "digits_feeder",
    "StopAtStepHook",
    "ProgressHook",
]


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def inside(inner, outer):
    return inner["ts"] >= outer["ts"] - EPS and end(inner) <= end(outer) + EPS


def end(e):
    return e["ts"] + e["dur"]


def label(e):
    return "%s [%.3f, %.3f]" % (e["name"], e["ts"], end(e))


def sequential(spans, what, path):
    """Each span starts once the one before it has ended."""
    for a, b in zip(spans, spans[1:]):
        check(b["ts"] >= end(a) - EPS, "%s: %s: %s overlaps %s" % (path, what, label(b), label(a)))


def check_timeline(path, step):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "%s: no traceEvents list" % path)
    check(doc.get("otherData", {}).get("global_step") == step,
          "%s: otherData.global_step is %r, expected %d" % (path, doc.get("otherData", {}).get("global_step"), step))
    events = doc["traceEvents"]
    threads = [e for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"]
    check(len(threads) == 1, "%s: %d thread_name events, expected 1" % (path, len(threads)))
    tid = threads[0]["tid"]

    spans = [e for e in events if e.get("ph") == "X"]
    check(spans, "%s: no complete events" % path)
    for e in spans:
        for key in ("ts", "dur"):
            check(isinstance(e.get(key), (int, float)) and math.isfinite(e[key]),
                  "%s: %s has no finite %s" % (path, e.get("name"), key))
        check(e["dur"] >= 0, "%s: %s has a negative dur" % (path, label(e)))
        check(e.get("tid") == tid and e.get("pid") == 1,
              "%s: %s is on pid %r tid %r, not the training thread %r" % (path, e["name"], e.get("pid"), e.get("tid"),
                                                                          tid))

    steps = [e for e in spans if e.get("cat") == "step"]
    check(len(steps) == 1, "%s: %d step spans, expected 1" % (path, len(steps)))
    whole = steps[0]
    check(whole["name"] == "step %d" % step, "%s: the step span is named %r, expected 'step %d'" % (path, whole["name"],
                                                                                                      step))
    for e in spans:
        check(inside(e, whole), "%s: %s is not inside %s" % (path, label(e), label(whole)))

    execs = [e for e in spans if e.get("cat") == "executor"]
    check(len(execs) == 1 and execs[0]["name"] == "executor.run",
          "%s: expected one executor span 'executor.run', found %s" % (path, [e["name"] for e in execs]))
    executor = execs[0]
    ops = sorted((e for e in spans if e.get("cat") == "op"), key=lambda e: e["ts"])
    check(any(e["name"] == "train" for e in ops), "%s: no span of the 'train' op among %s" % (path,
                                                                                             [e["name"] for e in ops]))
    for e in ops:
        check(inside(e, executor), "%s: op %s is not inside %s" % (path, label(e), label(executor)))
    sequential(ops, "ops", path)

    hooks = [e for e in spans if e.get("cat") == "hook"]
    check(len(hooks) + len(ops) + 2 == len(spans),
          "%s: spans of unknown categories: %s" % (path, [e.get("cat") for e in spans
                                                          if e.get("cat") not in ("step", "executor", "op", "hook")]))
    by_callback = {}
    for e in hooks:
        m = re.fullmatch(r"(.+)\.(before_run|after_run)", e["name"])
        check(m, "%s: hook span %r is not '<hook>.before_run' or '<hook>.after_run'" % (path, e["name"]))
        by_callback.setdefault(m.group(2), []).append((m.group(1), e))
    for callback, expected in (("before_run", HOOK_ORDER[1:]), ("after_run", HOOK_ORDER)):
        got = sorted(by_callback.get(callback, []), key=lambda he: he[1]["ts"])
        names = [h for h, _ in got]
        check(names == expected, "%s: %s spans in the order %s, expected %s" % (path, callback, names, expected))
        sequential([e for _, e in got], callback + " spans", path)
        for _, e in got:
            if callback == "before_run":
                check(end(e) <= executor["ts"] + EPS, "%s: %s ends after %s starts" % (path, label(e),
                                                                                         label(executor)))
            else:
                check(e["ts"] >= end(executor) - EPS, "%s: %s starts before %s ends" % (path, label(e),
                                                                                          label(executor)))
    return len(spans)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-digits", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    prof = os.path.join(a.workdir, "profile")
    cmd = [a.train_digits, "--steps", "300", "--log-every", "0", "--profile-dir", prof, "--profile-steps", "100",
           "--checkpoint-dir", os.path.join(a.workdir, "ckpt"), "--save-steps", "100",
           "--summary-dir", os.path.join(a.workdir, "summaries"), "--progress", "--early-stop-patience", "100"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 or not r.stdout.startswith("result: step=300 "):
        print("check_timeline: %s: exit %d\nstdout:\n%s\nstderr:\n%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                                         r.stderr))
        return 1
    try:
        # Beside the timelines, the event file of their run-metadata events
        # (check_events.py reads it).
        names = sorted(n for n in os.listdir(prof) if "tfevents" not in n)
        expected = ["timeline-100.json", "timeline-200.json", "timeline-300.json"]
        check(names == expected, "%s holds %s, expected %s" % (prof, names, expected))
        events = [n for n in os.listdir(prof) if "tfevents" in n]
        check(len(events) == 1, "%s holds the event files %s, expected one" % (prof, events))
        for name in names:
            step = int(re.fullmatch(r"timeline-(\d+)\.json", name).group(1))
            n = check_timeline(os.path.join(prof, name), step)
            print("check_timeline: %s: %d spans nest" % (name, n))
    except Failure as e:
        print("check_timeline: FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
