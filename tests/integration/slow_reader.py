#!/usr/bin/env python3
"""A throttled consumer for the integration tests: copies its input(s) to its output(s) at no
more than RATE bytes per second in all, in small reads, until end of input.

  slow_reader.py RATE [--max-seconds N] [--label NAME]                  stdin -> stdout
  slow_reader.py RATE --in PATH --out PATH [--in PATH --out PATH ...]   several streams

RATE: bytes per second, with an optional suffix K, KiB, M, MiB (e.g. 0.5MiB, 128KiB, 524288).
With several --in/--out pairs (e.g. the named pipes of `xbak --fifo-streams=N`, each copied to
its own file) the streams share the one RATE, as one slow uploader reading N pipes would: a
pipe that carries most of the bytes is not held to 1/N of the rate. The inputs are opened in
order (a FIFO's open waits for its writer, which opens thread_0 first).
--max-seconds bounds the run: past it the reader stops reading and exits 3 (its writer then sees
its reader go away), so a test never hangs on it. At the end one line goes to stderr:
  slow_reader[NAME]: N bytes in T s (R MiB/s)
Memory is bounded: one read of RATE/20 bytes (at least 4 KiB, at most 64 KiB) at a time.
"""
import os
import re
import select
import sys
import time


def parse_rate(s):
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(|K|KB|KiB|M|MB|MiB)", s.strip(), re.IGNORECASE)
    if not m:
        raise SystemExit(f"slow_reader: bad rate '{s}' (e.g. 0.5MiB, 128KiB, 524288)")
    mult = {"": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20}
    rate = float(m.group(1)) * mult[m.group(2).lower()]
    if rate <= 0:
        raise SystemExit("slow_reader: the rate must be positive")
    return rate


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(argv):
    args = list(argv)
    ins, outs, pos = [], [], []
    opts = {"--max-seconds": None, "--label": ""}
    while args:
        a = args.pop(0)
        if a in ("--in", "--out", "--max-seconds", "--label"):
            if not args:
                raise SystemExit(f"slow_reader: {a} needs a value")
            v = args.pop(0)
            if a == "--in":
                ins.append(v)
            elif a == "--out":
                outs.append(v)
            else:
                opts[a] = v
        else:
            pos.append(a)
    if len(pos) != 1 or len(ins) != len(outs):
        raise SystemExit(__doc__)
    rate = parse_rate(pos[0])
    limit = float(opts["--max-seconds"]) if opts["--max-seconds"] else None
    label = f"[{opts['--label']}]" if opts["--label"] else ""
    chunk = int(min(64 << 10, max(4 << 10, rate / 20)))

    t0 = time.monotonic()
    streams = {}  # input fd -> output fd
    if ins:
        for i, o in zip(ins, outs):
            fin = os.open(i, os.O_RDONLY)
            streams[fin] = os.open(o, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    else:
        streams[sys.stdin.fileno()] = sys.stdout.fileno()
    total = 0
    status = 0
    while streams:
        ready, _, _ = select.select(list(streams), [], [], 1.0)
        for fin in ready:
            # Keep total <= rate * elapsed: sleep until the next read is allowed.
            ahead = total / rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
            data = os.read(fin, chunk)
            if not data:
                if fin != sys.stdin.fileno():
                    os.close(fin)
                    os.close(streams[fin])
                del streams[fin]
                continue
            write_all(streams[fin], data)
            total += len(data)
        if limit is not None and streams and time.monotonic() - t0 > limit:
            print(f"slow_reader{label}: no end of input after {limit:.0f} s; giving up", file=sys.stderr)
            status = 3
            break
    dt = time.monotonic() - t0
    print(f"slow_reader{label}: {total} bytes in {dt:.1f} s ({total / max(dt, 1e-9) / (1 << 20):.3f} MiB/s)",
          file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
