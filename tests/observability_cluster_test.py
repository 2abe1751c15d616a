#!/usr/bin/python3
"""Seeing a job, end to end with real processes: `launch --timeline` over a 2-worker
`train` with an evaluator, TensorBoard files and checkpoints; the merged timeline
holds every task's spans on one clock; `report` turns the files into one HTML page
that headless Chromium renders without a console message and not blank; the browser
check itself fails on a page with a script error and on a blank page.

Usage: observability_cluster_test.py LAUNCH TRAIN REPORT BROWSER_CHECK   (Bazel passes them)
"""
import json
import os
import re
import subprocess
import sys

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAILED: " + message, file=sys.stderr)
    return condition


def run(argv, timeout=240):
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def main(launch, train, report, browser_check):
    tmp = os.environ.get("TEST_TMPDIR", "/tmp")
    timeline = os.path.join(tmp, "job_timeline.json")
    metrics = os.path.join(tmp, "metrics.json")
    tensorboard = os.path.join(tmp, "tb")
    checkpoints = os.path.join(tmp, "ckpt")
    code, out = run([launch, "--num_workers=2", "--evaluator", "--timeline=" + timeline, "--", train,
                     "--epochs=3", "--steps_per_epoch=30", "--checkpoint_dir=" + checkpoints,
                     "--checkpoint_freq_steps=30", "--evaluator_poll_s=0.05",
                     "--tensorboard_dir=" + tensorboard, "--metrics_json=" + metrics])
    if not check(code == 0, "launch ... train exited %d:\n%s" % (code, out)):
        return
    check(re.search(r"timeline of 2 tasks written to \S*job_timeline.json", out) is not None,
          "launch names the merged timeline:\n" + out)

    # The merged timeline: valid JSON, every ring task a process row, spans of each.
    with open(timeline) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    rows = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    check(rows == {0: "worker:0", 1: "worker:1"}, "one process row per worker: %s" % rows)
    spans = [e for e in events if e.get("ph") == "X"]
    for pid in (0, 1):
        mine = [e for e in spans if e["pid"] == pid]
        names = {e["name"] for e in mine}
        allreduces = [e for e in mine if e["cat"] == "collective" and e["name"] == "allreduce"]
        check(len(allreduces) >= 90, "worker %d: all-reduce spans (%d)" % (pid, len(allreduces)))
        check(all(e["args"]["bytes"] > 0 and e["args"]["algorithm"] in ("ring", "recursive_doubling")
                  and e["args"]["links"] for e in allreduces), "worker %d: all-reduce args" % pid)
        steps = [e for e in mine if e["cat"] == "step"]
        check(len(steps) == 90, "worker %d: 90 step spans (%d)" % (pid, len(steps)))
        for wanted in ("forward dense", "backward dense", "loss", "optimizer", "data wait",
                       "wait for gradients", "metrics all-reduce", "rendezvous", "broadcast variables"):
            check(any(n.startswith(wanted) for n in names), "worker %d has a '%s' span" % (pid, wanted))
        # Pack by pack with an overlap thread (2 cores per worker), else all in one.
        check(any(n.startswith("gradient pack 0") or n == "gradients, all packs in one" for n in names),
              "worker %d has a gradient all-reduce span" % pid)
        check(any(e["name"] == "gradient pack 0 ready" for e in mine if e["ph"] == "i") or
              any(e.get("ph") == "i" and e["pid"] == pid and e["name"].startswith("gradient pack")
                  for e in events), "worker %d: pack-ready instants" % pid)
    check(any(e["name"] == "checkpoint write" and e["pid"] == 0 for e in spans), "the chief's checkpoint writes")
    tasks = trace["otherData"]["tasks"]
    check(len(tasks) == 2, "two tasks in otherData")
    for t in tasks:
        # One host: the true offset is 0, so the estimate is its error, which is at
        # most half its round trip (+ a little for reading the clocks); the merge
        # uses the shared clock itself.
        if t["rank"] != 0:
            check(t["clock_offset_rtt_us"] >= 0, "worker %d: a clock offset was estimated" % t["rank"])
            check(abs(t["clock_offset_us"]) <= t["clock_offset_rtt_us"] / 2 + 50,
                  "worker %d: offset %d us within half its round trip %d us on one host"
                  % (t["rank"], t["clock_offset_us"], t["clock_offset_rtt_us"]))
            check(t["clock"].startswith("the chief's"), "worker %d: under the chief's kernel, its clock is the chief's: %s"
                  % (t["rank"], t["clock"]))
    # Steps of the two workers overlap in time once aligned (they wait for each other).
    last = {pid: max(e["ts"] + e["dur"] for e in spans if e["pid"] == pid and e["cat"] == "step") for pid in (0, 1)}
    check(abs(last[0] - last[1]) < 200000, "the workers' last steps end together: %s" % last)

    # The report page.
    page = os.path.join(tmp, "report.html")
    code, out = run([report, "--metrics_json=" + metrics, "--tensorboard_dir=" + tensorboard,
                     "--timeline=" + timeline, "--output=" + page, "--title=observability test"])
    if not check(code == 0, "report exited %d:\n%s" % (code, out)):
        return
    with open(page) as f:
        html = f.read()
    for wanted in ("<svg", "loss per epoch", "accuracy per epoch", "throughput per epoch",
                   "where a step&#39;s time went", "id=\"allreduce\"", "id=\"cluster\"", "worker:1"):
        check(wanted in html, "the page holds " + wanted)
    check(re.search(r"(src|href)\s*=\s*\"(https?:|//)", html) is None and "<script" not in html,
          "the page loads nothing from elsewhere and has no script")
    check(html.count("<circle") >= 6, "train and validation curve points")
    code, out = run(["/usr/bin/python3", browser_check, page, os.path.join(tmp, "report.png")], timeout=180)
    check(code == 0, "the report renders in Chromium:\n" + out)

    # The browser check can fail: a script error, a blank page.
    bad = os.path.join(tmp, "bad.html")
    with open(bad, "w") as f:
        f.write("<!DOCTYPE html><html><body><h1>x</h1><script>notDefined();</script></body></html>")
    code, out = run(["/usr/bin/python3", browser_check, bad, os.path.join(tmp, "bad.png")], timeout=180)
    check(code == 1 and "notDefined" in out, "a console error fails the check:\n" + out)
    blank = os.path.join(tmp, "blank.html")
    with open(blank, "w") as f:
        f.write("<!DOCTYPE html><html><body></body></html>")
    code, out = run(["/usr/bin/python3", browser_check, blank, os.path.join(tmp, "blank.png")], timeout=180)
    check(code == 1 and "blank render" in out, "a blank page fails the check:\n" + out)

    # Bad input: a clear error and exit 2.
    code, out = run([report, "--timeline=" + os.path.join(tmp, "nope.json"), "--output=" + page])
    check(code == 2 and "nope.json" in out, "a missing timeline: exit 2 naming it (%d):\n%s" % (code, out))
    # A timeline that cannot be written is found at startup, not after the training.
    env = dict(os.environ, RINGWORK_TIMELINE=os.path.join(tmp, "no", "such", "dir", "t.json"))
    proc = subprocess.run([train, "--epochs=1", "--steps_per_epoch=2"], capture_output=True, text=True,
                          timeout=120, env=env)
    out = proc.stdout + proc.stderr
    check(proc.returncode == 2 and "--timeline=" in out and "cannot write" in out and "epoch" not in out.lower(),
          "an unwritable timeline: exit 2 before training (%d):\n%s" % (proc.returncode, out))


if __name__ == "__main__":
    main(*sys.argv[1:5])
    print("%d failure(s)" % len(failures))
    sys.exit(1 if failures else 0)
