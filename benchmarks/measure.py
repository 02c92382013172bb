#!/usr/bin/python3
"""Runs one command and reports what a benchmark row needs, as one JSON line on stdout:

  benchmarks/measure.py [--log FILE] -- CMD...
  {"rc": 0, "seconds": 12.3, "cpu_seconds": 10.1, "peak_rss_kb": 51234, "peak_fds": 37}

seconds: wall time; cpu_seconds and peak_rss_kb: /usr/bin/time's (which runs the command, so
that the figures are the command's alone, not this interpreter's memory inherited through vfork);
peak_fds: the most descriptors the command held at once, sampled from
/proc/PID/fd of the command and its descendants every 50 ms (a sample, not a trace: a burst shorter than that can be missed; listing a
directory of tens of thousands of descriptors takes a few ms, so the sampler costs the command a few
percent of one core at most). The command's output goes to --log (default: discarded).
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(k) for k in f.read().split()]
    except OSError:
        return []


def count_fds(time_pid):
    """Descriptors held by the command and its descendants (/usr/bin/time's own not counted); 0
    before it started or after it ended."""
    total, todo = 0, children(time_pid)
    while todo:
        pid = todo.pop()
        try:
            total += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            pass
        todo += children(pid)
    return total


def main():
    args = sys.argv[1:]
    log = os.devnull
    if args[:1] == ["--log"]:
        log, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: measure.py [--log FILE] -- CMD...")
    with open(log, "ab") as out, tempfile.NamedTemporaryFile("r") as tf:
        t0 = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o", tf.name, "--"] + args,
                                stdout=out, stderr=out)
        peak, done = [0], threading.Event()

        def sample():  # beside the wait below, so that the wall time is not rounded to the period
            while not done.wait(0.05):
                peak[0] = max(peak[0], count_fds(proc.pid))
        sampler = threading.Thread(target=sample)
        sampler.start()
        proc.wait()
        secs = time.monotonic() - t0
        done.set()
        sampler.join()
        last = (tf.read().strip().splitlines() or ["0 0 0"])[-1].split()
    rss, user, system = (last + ["0", "0", "0"])[:3] if len(last) == 3 else ("0", "0", "0")
    print(json.dumps({"rc": proc.returncode, "seconds": round(secs, 3),
                      "cpu_seconds": round(float(user) + float(system), 3),
                      "peak_rss_kb": int(rss), "peak_fds": peak[0]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
