#!/usr/bin/python3
"""Renders docs/benchmarks.md and PNG charts from the JSON results in docs/results/.

Usage: benchmarks/report.py [RESULTS_DIR] [OUT_MD]
Each *-bench.json written by a benchmark script becomes one section: the command
that made it, the machine, a table of medians with every repetition, ratios, peak
RSS, and a chart (docs/img/<name>.png).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "results")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "benchmarks.md")
IMG = os.path.join(os.path.dirname(OUT), "img")


def reps(runs, **kw):
    xs = [r for r in runs if all(r.get(k) == v for k, v in kw.items())]
    return xs


def fmt_reps(xs, key="seconds"):
    return ", ".join(f"{x[key]:.2f}" for x in xs)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def section_backup(doc, name):
    runs = doc["runs"]
    out = [f"## Full backup: xbak vs mariabackup ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/backup_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs, kernel {doc['machine']['kernel']}; "
               f"{doc['versions']['mariabackup']}.")
    out.append("")
    out.append("Wall time in seconds (median, then every repetition) and peak RSS of the backup process. "
               "`speedup` = mariabackup median / xbak median (above 1: xbak is faster).")
    out.append("")
    for sc, title in (("flushed", "Flushed datadir (all dirty pages written first)"),
                      ("mass-create", "Right after creating many tables (their page 0 is not on disk yet)")):
        out.append(f"### {title}")
        out.append("")
        out.append("| --parallel | xbak s (reps) | mariabackup s (reps) | speedup | xbak peak RSS | mariabackup peak RSS |")
        out.append("|---|---|---|---|---|---|")
        pars = sorted({r["parallel"] for r in runs if r["scenario"] == sc})
        for p in pars:
            x = reps(runs, scenario=sc, tool="xbak", parallel=p)
            m = reps(runs, scenario=sc, tool="mariabackup", parallel=p)
            if not x or not m:
                continue
            mx, mm = median([r["seconds"] for r in x]), median([r["seconds"] for r in m])
            out.append(f"| {p} | {mx:.2f} ({fmt_reps(x)}) | {mm:.2f} ({fmt_reps(m)}) | {mm / mx:.2f}x | "
                       f"{max(r['peak_rss_kb'] for r in x) / 1024:.0f} MiB | {max(r['peak_rss_kb'] for r in m) / 1024:.0f} MiB |")
        out.append("")
    load = [r for r in runs if r["scenario"] == "load"]
    if load:
        out.append("### Server throughput while a backup runs (sysbench oltp_write_only, 2 threads)")
        out.append("")
        out.append("| during | sysbench tps (median, reps) | backup s (median) |")
        out.append("|---|---|---|")
        for tool, label in (("none", "no backup (baseline)"), ("xbak", "xbak --parallel=2"),
                            ("mariabackup", "mariabackup --parallel=2")):
            xs = reps(load, tool=tool)
            if not xs:
                continue
            tps = [r["tps"] for r in xs if r.get("tps") is not None]
            secs = "-" if tool == "none" else "%.2f" % median([r["seconds"] for r in xs])
            all_tps = ", ".join("%.0f" % t for t in tps)
            out.append(f"| {label} | {median(tps):.0f} ({all_tps}) | {secs} |")
        out.append("")
    # chart: time against parallelism, both scenarios
    os.makedirs(IMG, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, sc in zip(axes, ("flushed", "mass-create")):
        for tool in ("xbak", "mariabackup"):
            pars = sorted({r["parallel"] for r in runs if r["scenario"] == sc and r["tool"] == tool})
            ys = [median([r["seconds"] for r in reps(runs, scenario=sc, tool=tool, parallel=p)]) for p in pars]
            if pars:
                ax.plot(pars, ys, marker="o", label=tool)
        ax.set_title(sc)
        ax.set_xlabel("--parallel")
        ax.set_ylabel("seconds")
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.tight_layout()
    png = os.path.join(IMG, f"{name}.png")
    fig.savefig(png, dpi=80)
    plt.close(fig)
    out.append(f"![{name}](img/{name}.png)")
    out.append("")
    return out


def section_stream(doc, name):
    runs = doc["runs"]
    out = [f"## Streaming a backup to /dev/null ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/stream_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}. "
               "Both tools with --parallel=4; xbak's FIFO streams are each drained by a `cat`.")
    out.append("")
    base = reps(runs, tool="mariabackup")
    mb = median([r["seconds"] for r in base]) if base else None
    out.append("| tool | compression | streams | s (median, reps) | vs mariabackup | CPU s | peak RSS | MiB streamed |")
    out.append("|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["tool"], r["compress"], r["streams"]) for r in runs}, key=lambda k: (k[0] != "mariabackup", k[1], k[2]))
    for tool, comp, n in keys:
        xs = reps(runs, tool=tool, compress=comp, streams=n)
        t = median([r["seconds"] for r in xs])
        ratio = f"{mb / t:.2f}x" if mb else "-"
        out.append(f"| {tool} | {comp} | {n} | {t:.2f} ({fmt_reps(xs)}) | {ratio} | "
                   f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB | "
                   f"{median([r['bytes'] for r in xs]) / 1048576:.0f} |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for comp in ("none", "lz4", "zstd"):
        ns = sorted({r["streams"] for r in runs if r["tool"] == "xbak" and r["compress"] == comp})
        ys = [median([r["seconds"] for r in reps(runs, tool="xbak", compress=comp, streams=n)]) for n in ns]
        if ns:
            ax.plot(ns, ys, marker="o", label=f"xbak {comp}")
    if mb:
        ax.axhline(mb, color="grey", linestyle="--", label="mariabackup (1 stream)")
    ax.set_xlabel("FIFO streams")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, f"{name}.png"), dpi=80)
    plt.close(fig)
    out.append(f"![{name}](img/{name}.png)")
    out.append("")
    return out


def section_xbcloud(doc, name):
    runs = doc["runs"]
    mib = doc["bytes"] / 1048576
    out = [f"## xbcloud against aws s3 cp and rclone, same MinIO ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/xbcloud_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs (shared by client and MinIO). "
               f"The same {mib:.0f} MiB xbstream, on stdin from the page cache, to one MinIO on 127.0.0.1; "
               f"downloads to /dev/null. {doc['versions']['aws']}; {doc['versions']['rclone']}. "
               "aws uses its defaults (8 MiB parts, 10 concurrent requests), rclone its defaults "
               "(5 MiB chunks, 4 concurrent). CPU and peak RSS are the client's.")
    out.append("")
    for op in ("put", "get"):
        xs_all = [r for r in runs if r["op"] == op]
        if not xs_all:
            continue
        out.append(f"### {op}")
        out.append("")
        out.append("| tool | parallel | s (median, reps) | MiB/s | CPU s | peak RSS |")
        out.append("|---|---|---|---|---|---|")
        keys = sorted({(r["tool"], r["parallel"]) for r in xs_all}, key=lambda k: (k[0] != "xbcloud", k[0], k[1]))
        for tool, par in keys:
            xs = reps(xs_all, tool=tool, parallel=par)
            t = median([r["seconds"] for r in xs])
            out.append(f"| {tool} | {par} | {t:.2f} ({fmt_reps(xs)}) | {mib / t:.0f} | "
                       f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
        out.append("")
    out.append("Reading the numbers: `xbcloud get` checks the MD5 of every byte it downloads against the "
               "manifest (OpenSSL's MD5 runs at about 490 MB/s per core on this machine, so that check alone is "
               "about 2 CPU-seconds per GiB, spread over a pool of threads), and `aws s3 cp` checks its "
               "parts too, while `rclone cat` streams one object without any check: on 2 cores shared with "
               "MinIO that is the whole difference. xbcloud's peak RSS grows with `--parallel`: each request in "
               "flight holds one object (`--read-buffer-size`, 10 MiB); put holds at most (parallel + 2) objects "
               "per stream, get parallel + 2.")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, op in zip(axes, ("put", "get")):
        labels, vals = [], []
        for tool, par in sorted({(r["tool"], r["parallel"]) for r in runs if r["op"] == op},
                                key=lambda k: (k[0] != "xbcloud", k[0], k[1])):
            xs = reps(runs, op=op, tool=tool, parallel=par)
            labels.append(f"{tool}\n{par}" if tool == "xbcloud" else tool)
            vals.append(mib / median([r["seconds"] for r in xs]))
        ax.bar(labels, vals, color=["tab:blue" if l.startswith("xbcloud") else "tab:grey" for l in labels])
        ax.set_title(op)
        ax.set_ylabel("MiB/s")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, f"{name}.png"), dpi=80)
    plt.close(fig)
    out.append(f"![{name}](img/{name}.png)")
    out.append("")
    return out


def section_prepare(doc, name):
    runs = doc["runs"]
    out = [f"## Incremental prepare: many small deltas ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/prepare_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}. "
               f"{doc['tables']} tables, one row changed in each: {doc['deltas']} `.delta` files, "
               f"{doc['delta_bytes'] / 1048576:.1f} MiB. Each run starts from a fresh copy of the same prepared full backup. "
               "mariabackup applies deltas and redo in one command; xbak applies the deltas (its redo apply is not "
               "written yet), and `mariabackup --prepare` then applies the redo (timed separately, after the "
               "--parallel=8 run).")
    out.append("")
    mb = [r for r in runs if r["tool"] == "mariabackup" and r["step"] == "deltas+redo"]
    redo = [r for r in runs if r["step"] == "redo-after-xbak"]
    mbt = median([r["seconds"] for r in mb]) if mb else None
    redot = median([r["seconds"] for r in redo]) if redo else 0
    out.append("| what | parallel | s (median, reps) | vs mariabackup | with the redo step | CPU s | peak RSS |")
    out.append("|---|---|---|---|---|---|---|")
    if mb:
        out.append(f"| mariabackup --prepare --incremental-dir (deltas + redo) | 1 | {mbt:.2f} ({fmt_reps(mb)}) | 1.00x | "
                   f"{mbt:.2f} | {median([r['cpu_seconds'] for r in mb]):.2f} | {max(r['peak_rss_kb'] for r in mb) / 1024:.0f} MiB |")
    for p in sorted({r["parallel"] for r in runs if r["tool"] == "xbak"}):
        xs = reps(runs, tool="xbak", parallel=p)
        t = median([r["seconds"] for r in xs])
        ratio = f"{mbt / t:.1f}x" if mbt else "-"
        tot = f"{t + redot:.2f}" if redo else "-"
        out.append(f"| xbak --prepare --incremental-dir (deltas) | {p} | {t:.2f} ({fmt_reps(xs)}) | {ratio} | {tot} | "
                   f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
    if redo:
        out.append(f"| mariabackup --prepare (redo only, after xbak) | 1 | {redot:.2f} ({fmt_reps(redo)}) | | | "
                   f"{median([r['cpu_seconds'] for r in redo]):.2f} | {max(r['peak_rss_kb'] for r in redo) / 1024:.0f} MiB |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ps = sorted({r["parallel"] for r in runs if r["tool"] == "xbak"})
    ax.plot(ps, [median([r["seconds"] for r in reps(runs, tool="xbak", parallel=p)]) for p in ps], marker="o",
            label="xbak: delta apply")
    if mbt:
        ax.axhline(mbt, color="grey", linestyle="--", label="mariabackup: deltas + redo")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("--parallel")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, f"{name}.png"), dpi=80)
    plt.close(fig)
    out.append(f"![{name}](img/{name}.png)")
    out.append("")
    return out


SECTIONS = {"backup-bench": section_backup, "stream-bench": section_stream, "xbcloud-bench": section_xbcloud,
            "prepare-bench": section_prepare}


def main():
    lines = ["# Benchmarks", "",
             "Every figure here was produced by a script in `benchmarks/`, which starts its own servers on "
             "127.0.0.1 and measures xbak side by side with the reference tool in the same run. "
             "This page is generated by `benchmarks/report.py` from the JSON files in `docs/results/`; "
             "timings on a shared 2-core machine are noisy, so every repetition is listed.", ""]
    for fn in sorted(os.listdir(RES)):
        if not fn.endswith(".json"):
            continue
        name = fn[:-5]
        doc = json.load(open(os.path.join(RES, fn)))
        if name in SECTIONS:
            lines += SECTIONS[name](doc, name)
    open(OUT, "w").write("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
