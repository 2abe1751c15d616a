#!/usr/bin/python3
"""Seeded random faults during elastic `train` runs on a localhost cluster.

Each scenario starts N workers (each its own process and TF_CONFIG) training
with --min_workers=2, a checkpoint directory and a backup directory, then, at
random moments (inside membership rounds, grows and checkpoint writes as they
happen to fall), kills workers (SIGKILL), stops and resumes them (SIGSTOP bursts)
and starts killed ones again (they join the running job). With --hosts (root),
each worker runs on its own emulated host (a network namespace on a bridge, with
its own /dev/shm), so the workers talk gRPC, and the faults also cut a host off
the network and heal it (its link down, then up: a partition of one host from
the others) and slow a host's link (tc's token bucket at 2 Mbit/s both ways; this
kernel has no netem for plain delay). After each scenario it checks the
invariants:

  - every process exits within its bound, with a code a fault explains
    (0; 3 or 4 for a worker that lost its ring or quorum; 137 for one it killed);
  - every worker that exits 0 has the same weights fingerprint;
  - `latest` in the checkpoint and backup directories never moves backwards
    (polled every 20 ms);
  - workers that report a generation agree on how many workers go on in it;
  - when the run finished: the metrics count no example more than once per
    epoch (train_examples; fewer is reported as a note: a step whose metrics
    all-reduce was lost in a regroup trained but is not counted, a known gap).

  scripts/elastic_chaos.py --scenarios=20 --seed=1          # from the repo root, built
  scripts/elastic_chaos.py --scenarios=1 --seed=1 --first=7  # replays scenario 7
  scripts/elastic_chaos.py --hosts --scenarios=10 --seed=2    # emulated hosts (root)

Exit 0 when no invariant was violated, 1 otherwise (each violation printed with
its scenario's replay command and the workers' logs kept in --work_dir).
"""

import argparse
import atexit
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

EXAMPLES = 4096
EXPLAINED_EXITS = {0, 3, 4, 128 + signal.SIGKILL}


def tf_configs(tfconfig, n):
    out = subprocess.run([tfconfig, "localhost", f"--num_workers={n}"], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def latest_step(directory):
    try:
        with open(os.path.join(directory, "latest")) as f:
            m = re.search(r"ckpt-(\d+)", f.read())
            return int(m.group(1)) if m else None
    except OSError:
        return None


class Watcher(threading.Thread):
    """Polls `latest` of each directory; records any step lower than one seen."""

    def __init__(self, directories):
        super().__init__(daemon=True)
        self.directories = directories
        self.highest = {d: -1 for d in directories}
        self.backwards = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for d in self.directories:
                step = latest_step(d)
                if step is None:
                    continue
                if step < self.highest[d]:
                    self.backwards.append(f"{d}/latest went from step {self.highest[d]} to {step}")
                self.highest[d] = max(self.highest[d], step)
            time.sleep(0.02)


class Hosts:
    """Emulated hosts: network namespaces on a bridge, each with a process that
    holds its mount namespace (a private tmpfs on /dev/shm)."""

    def __init__(self, count):
        tag = os.getpid() % 200 + 20
        self.net, self.bridge, self.count = f"10.218.{tag}", f"rwcb{tag}", count
        self.ns = [f"rwc{tag}-h{i}" for i in range(count)]
        self.veth = [f"rwcv{tag}-{i}" for i in range(count)]
        self.holders = []
        atexit.register(self.remove)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: sys.exit(1))
        sh = lambda *cmd: subprocess.run(cmd, check=True)
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.net}.1/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for i in range(count):
            sh("ip", "netns", "add", self.ns[i])
            sh("ip", "link", "add", self.veth[i], "type", "veth", "peer", "name", "eth0",
               "netns", self.ns[i])
            sh("ip", "link", "set", self.veth[i], "master", self.bridge, "up")
            sh("ip", "-n", self.ns[i], "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            sh("ip", "-n", self.ns[i], "link", "set", "eth0", "up")
            sh("ip", "-n", self.ns[i], "link", "set", "lo", "up")
            self.holders.append(subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{self.ns[i]}", "unshare", "-m", "--propagation",
                 "private", "sh", "-c", "mount -t tmpfs tmpfs /dev/shm && echo up && exec sleep infinity"],
                stdout=subprocess.PIPE, text=True))
            if self.holders[-1].stdout.readline().strip() != "up":
                raise RuntimeError(f"emulated host {i} did not come up")

    def address(self, i):
        return f"{self.net}.{i + 2}"

    def tf_configs(self, n):
        workers = [f"{self.address(i)}:2222" for i in range(n)]
        return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}})
                for i in range(n)]

    def command(self, i, argv):
        pid = self.holders[i].pid
        return ["nsenter", f"--net=/proc/{pid}/ns/net", f"--mount=/proc/{pid}/ns/mnt"] + argv

    def cut(self, i, cut):
        subprocess.run(["ip", "link", "set", self.veth[i], "down" if cut else "up"], check=True)

    def slow(self, i, slow):
        shape = ["tbf", "rate", "2mbit", "burst", "16kbit", "latency", "400ms"]
        for prefix in (["ip", "-n", self.ns[i]], []):
            dev = "eth0" if prefix else self.veth[i]
            cmd = (["tc", "qdisc", "add", "dev", dev, "root"] + shape if slow
                   else ["tc", "qdisc", "del", "dev", dev, "root"])
            if prefix:
                cmd = ["ip", "netns", "exec", self.ns[i]] + cmd
            subprocess.run(cmd, check=False, stderr=subprocess.DEVNULL)

    def remove(self):
        for i, ns in enumerate(self.ns):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            subprocess.run(["ip", "link", "del", self.veth[i]], stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        for h in self.holders:
            h.kill()
        subprocess.run(["ip", "link", "del", self.bridge], stderr=subprocess.DEVNULL)
        self.holders, self.ns = [], []


class Worker:
    def __init__(self, args, index, tf_config, log_dir, hosts=None):
        self.args, self.index, self.tf_config, self.log_dir = args, index, tf_config, log_dir
        self.proc, self.incarnation, self.results, self.stopped = None, 0, [], False
        self.hosts = hosts

    def start(self, train_args):
        self.incarnation += 1
        log = open(os.path.join(self.log_dir, f"worker{self.index}.{self.incarnation}.log"), "w")
        env = dict(os.environ, TF_CONFIG=self.tf_config)
        env.pop("RINGWORK_CRASH_AT", None)
        argv = [self.args.train] + train_args
        if self.hosts is not None:
            argv = self.hosts.command(self.index, argv)
        self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.log_path = log.name
        self.started = time.monotonic()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def collect(self):
        """Records the exit of the current process (once)."""
        code = self.proc.returncode
        code = 128 - code if code < 0 else code
        with open(self.log_path) as f:
            text = f.read()
        self.results.append({"code": code, "log": self.log_path, "text": text,
                             "seconds": time.monotonic() - self.started})
        self.proc = None


def plan(rng, n, duration, hosts):
    """Random faults: (time, kind, worker, seconds)."""
    kinds = ["kill", "kill_restart", "stop", "stop", "kill_restart"]
    if hosts:
        kinds += ["partition", "partition", "slow", "slow"]
    events = []
    for _ in range(rng.randint(1, 3)):
        t = rng.uniform(0.5, duration)
        kind = rng.choice(kinds)
        events.append((t, kind, rng.randrange(n), rng.uniform(0.3, 4.0)))
    return sorted(events)


def run_scenario(args, index, rng, hosts):
    n = rng.choice([3, 4, 5])
    epochs = rng.choice([15, 20, 30])
    work = os.path.join(args.work_dir, f"scenario{index}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ckpt, backup = os.path.join(work, "ckpt"), os.path.join(work, "backup")
    train_args = ["--dataset=synthetic", f"--synthetic_examples={EXAMPLES}",
                  "--global_batch_size=120", f"--epochs={epochs}", "--verbose=0",
                  "--intra_op_threads=1", "--inter_op_threads=1", "--min_workers=2",
                  "--heartbeat_interval_s=0.5", "--heartbeat_misses=4",
                  # A worker started again after the run ended waits for peers
                  # that never come: it gives up (exit 4) within the bound.
                  "--startup_timeout_s=15",
                  f"--checkpoint_dir={ckpt}", "--checkpoint_freq_steps=10",
                  f"--backup_dir={backup}", f"--metrics_json={work}/metrics.json"]
    events = plan(rng, n, 0.2 * epochs, hosts is not None)  # Most land while it trains.
    configs = hosts.tf_configs(n) if hosts else tf_configs(args.tfconfig, n)
    workers = [Worker(args, i, c, work, hosts) for i, c in enumerate(configs)]
    watcher = Watcher([ckpt, backup])
    watcher.start()
    for w in workers:
        w.start(train_args)
    begin = time.monotonic()
    pending = [(t, kind, k, s, False) for (t, kind, k, s) in events]
    violations, notes = [], []
    while True:
        now = time.monotonic() - begin
        for w in workers:
            if w.proc is not None and w.proc.poll() is not None:
                w.collect()
        still = []
        for (t, kind, k, s, second_half) in pending:
            w = workers[k]
            if now < t:
                still.append((t, kind, k, s, second_half))
                continue
            if kind == "kill" and w.alive():
                w.proc.send_signal(signal.SIGKILL)
            elif kind == "kill_restart":
                if not second_half:
                    if w.alive():
                        w.proc.send_signal(signal.SIGKILL)
                        still.append((t + s, kind, k, s, True))
                elif w.proc is None and any(o.alive() for o in workers):
                    w.start(train_args)
                elif w.proc is not None and w.alive() and now < t + 5:
                    still.append((t + 0.1, kind, k, s, True))  # Not reaped yet.
            elif kind == "stop":
                if not second_half and w.alive():
                    w.proc.send_signal(signal.SIGSTOP)
                    w.stopped = True
                    still.append((t + s, kind, k, s, True))
                elif second_half and w.proc is not None:
                    w.proc.send_signal(signal.SIGCONT)
                    w.stopped = False
            elif kind in ("partition", "slow"):
                # The host, not the process: it heals even after its worker exited.
                change = hosts.cut if kind == "partition" else hosts.slow
                change(k, not second_half)
                if not second_half:
                    still.append((t + s, kind, k, s, True))
        pending = still
        if not any(w.alive() for w in workers) and not pending:
            break
        if now > args.bound_s:
            for w in workers:
                if w.alive():
                    violations.append(f"worker {w.index} still running after {args.bound_s} s")
                    w.proc.send_signal(signal.SIGCONT)
                    w.proc.send_signal(signal.SIGKILL)
                    w.proc.wait()
                    w.collect()
            break
        time.sleep(0.02)
    for w in workers:  # Exited after the loop last looked.
        if w.proc is not None:
            w.proc.wait()
            w.collect()
    for i in range(n if hosts else 0):  # Every host whole again for the next scenario.
        hosts.cut(i, False)
        hosts.slow(i, False)
    watcher.stop.set()
    watcher.join()
    violations += watcher.backwards
    return check(n, epochs, events, workers, work, violations, notes)


def check(n, epochs, events, workers, work, violations, notes):
    fingerprints, generations = set(), {}
    finished = False
    for w in workers:
        for incarnation, r in enumerate(w.results):
            if r["code"] not in EXPLAINED_EXITS:
                violations.append(f"worker {w.index} exited {r['code']} ({r['log']})")
            if r["code"] == 0:
                finished = True
                fingerprints.update(re.findall(r"weights fingerprint ([0-9a-f]{16})", r["text"]))
            if incarnation > 0:
                continue  # A restarted worker may have started a new job (its own generations).
            for g, count in re.findall(r"generation (\d+): .*?(\d+) (?:of \d+ )?workers go on",
                                       r["text"]):
                generations.setdefault(int(g), set()).add(int(count))
    if len(fingerprints) > 1:
        violations.append(f"different weights fingerprints: {sorted(fingerprints)}")
    for g, counts in sorted(generations.items()):
        if len(counts) > 1:
            violations.append(f"generation {g}: workers disagree on its size {sorted(counts)}")
    metrics_path = os.path.join(work, "metrics.json")
    examples = None
    if finished and os.path.exists(metrics_path):
        with open(metrics_path) as f:
            examples = json.load(f).get("train_examples")
        if examples is None or examples > epochs * EXAMPLES:
            violations.append(f"trained {examples} examples, not {epochs} x {EXAMPLES}")
        elif examples < epochs * EXAMPLES:
            # A step whose metrics all-reduce failed trained (its update was
            # applied everywhere) but its examples were not counted (the known
            # gap of docs/ARCHITECTURE.md): reported, not a violation.
            notes.append(f"counted {examples} examples, not {epochs} x {EXAMPLES} (a step's "
                         "tail lost in a regroup is not counted)")
    codes = [[r["code"] for r in w.results] for w in workers]
    summary = (f"{n} workers, {epochs} epochs, faults "
               + ", ".join(f"{kind} w{k} at {t:.1f}s ({s:.1f}s)" for t, kind, k, s in events)
               + f"; exits {codes}; {'finished' if finished else 'stopped'}")
    return summary, violations, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="index of the first scenario")
    parser.add_argument("--train", default="bazel-bin/tools/train")
    parser.add_argument("--tfconfig", default="bazel-bin/tools/tfconfig")
    parser.add_argument("--work_dir",
                        default=os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "elastic_chaos"))
    parser.add_argument("--bound_s", type=float, default=120, help="a scenario's time bound")
    parser.add_argument("--hosts", action="store_true",
                        help="each worker on its own emulated host; adds partitions and slow links "
                             "(needs root)")
    args = parser.parse_args()
    # Entering a host's mount namespace leaves the working directory behind.
    args.train, args.work_dir = os.path.abspath(args.train), os.path.abspath(args.work_dir)
    hosts = None
    if args.hosts:
        if os.geteuid() != 0:
            print("SKIPPED: --hosts needs root (network namespaces)")
            return 0
        hosts = Hosts(5)
    failed = 0
    for index in range(args.first, args.first + args.scenarios):
        rng = random.Random(args.seed * 1000003 + index)
        started = time.monotonic()
        summary, violations, notes = run_scenario(args, index, rng, hosts)
        took = time.monotonic() - started
        print(f"scenario {index} (seed {args.seed}, {took:.1f} s): {summary}", flush=True)
        for v in violations:
            print(f"  VIOLATION: {v}", flush=True)
        for note in notes:
            print(f"  note: {note}", flush=True)
        if violations:
            failed += 1
            print(f"  replay: {sys.argv[0]} {'--hosts ' if hosts else ''}--seed={args.seed} "
                  f"--first={index} --scenarios=1", flush=True)
    print(f"{args.scenarios - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
