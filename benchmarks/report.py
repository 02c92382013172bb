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

from report_stores import section_stores  # noqa: E402
from report_pitr import section_pitr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "results")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "docs", "benchmarks.md")
IMG = os.path.join(os.path.dirname(OUT), "img")


def save_chart(fig, name):
    """Writes docs/img/<name>.png; returns the Markdown lines that show it."""
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, f"{name}.png"), dpi=80)
    plt.close(fig)
    return [f"![{name}](img/{name}.png)", ""]


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
    return out + save_chart(fig, name)


IMPACT_MODES = ("none", "xbak", "xbak-throttle", "mariabackup")
IMPACT_COLORS = {"none": "tab:grey", "xbak": "tab:blue", "xbak-throttle": "tab:cyan", "mariabackup": "tab:orange"}


def impact_label(doc, mode):
    return {"none": "no backup (baseline)", "xbak": f"xbak --parallel={doc['parallel']}",
            "xbak-throttle": f"xbak --parallel={doc['parallel']} --throttle={doc['throttle']}",
            "mariabackup": f"mariabackup --parallel={doc['parallel']}"}[mode]


def section_impact(doc, name):
    runs = doc["runs"]
    sb = doc["sysbench"]
    out = [f"## Impact on the server: sysbench during a backup ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/impact_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs (shared by the server, sysbench and "
               f"the backup); {doc['versions']['mariabackup']}; {doc['versions']['sysbench']}. One server "
               f"(innodb_log_file_size={doc['server']['innodb_log_file_size']}, "
               f"innodb_buffer_pool_size={doc['server']['innodb_buffer_pool_size']}), sysbench {sb['test']} on "
               f"{sb['tables']} tables of {sb['table_size']:,} rows, {sb['threads']} threads; the backups are about "
               f"{median([r['bytes'] for r in runs if r['mode'] == 'xbak'] or [0]) / 2**30:.1f} GiB. Each run flushes the "
               f"buffer pool's dirty pages, drops the page cache, starts sysbench and, {doc['warmup_seconds']} s later, "
               f"the backup (to a directory on the same disk, deleted afterwards) or, for the baseline, a "
               f"{doc['baseline_seconds']} s window. Throughput during a backup = the transactions sysbench completed "
               "between the backup's start and end (its per-second reports, prorated at both ends) over the backup's "
               f"duration; `share` = that over the median baseline ({doc['baseline_tps']:.0f} tps). `--throttle="
               f"{doc['throttle']}`: at most {doc['throttle']} MiB of data-file reads a second (the redo log copy is "
               "never throttled). `lost` = (baseline − throughput during) × duration: the transactions the server "
               "did not serve because of the backup. The order of the modes turns every repetition.")
    out.append("")
    mb = reps(runs, mode="mariabackup")
    mbs = median([r["share"] for r in mb]) if mb else None
    out.append("| during | sysbench tps (median, reps) | share of baseline (median, reps) | share vs mariabackup | "
               "backup s (median, reps) | MiB/s | peak RSS | lost |")
    out.append("|---|---|---|---|---|---|---|---|")
    for mode in IMPACT_MODES:
        xs = reps(runs, mode=mode)
        if not xs:
            continue
        share = median([r["share"] for r in xs])
        vs = f"{share / mbs:.2f}x" if mbs and mode in ("xbak", "xbak-throttle") else "-"
        if mode == "none":
            secs = rate = rss = lost = "-"
        else:
            secs = f"{median([r['seconds'] for r in xs]):.1f} ({fmt_reps(xs)})"
            rate = f"{median([r['bytes'] / 1048576 / r['seconds'] for r in xs]):.0f}"
            rss = f"{max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB"
            lost = f"{median([r['lost_transactions'] for r in xs]):,.0f}"
        out.append(f"| {impact_label(doc, mode)} | {median([r['tps'] for r in xs]):.0f} "
                   f"({', '.join('%.0f' % r['tps'] for r in xs)}) | {share * 100:.0f} % "
                   f"({', '.join('%.0f' % (r['share'] * 100) for r in xs)}) | {vs} | {secs} | {rate} | {rss} | {lost} |")
    out.append("")
    out.append("`share vs mariabackup` above 1: the server keeps more of its throughput during xbak's backup than "
               "during mariabackup's. MiB/s is the backup's size over its duration; peak RSS is the backup "
               "process's (/usr/bin/time). Reading the numbers: the share is what the server keeps *while* a backup "
               "runs, `lost` what the whole backup costs it; a backup that ends sooner can cost fewer transactions "
               "at the same share, and `--throttle` trades a higher share for a longer backup. With data many times "
               "the buffer pool, the server's misses and the backup's reads meet on the same disk; sysbench's "
               "baseline moves by 10-20 % from run to run on this shared VM, so differences of a few points of "
               "share are not resolved.")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 3]})
    modes = [m for m in IMPACT_MODES if reps(runs, mode=m)]
    labels = [impact_label(doc, m).replace(" --", "\n--").replace(" (", "\n(") for m in modes]
    shares = [100 * median([r["share"] for r in reps(runs, mode=m)]) for m in modes]
    ax1.bar(range(len(modes)), shares, color=[IMPACT_COLORS[m] for m in modes])
    for i, m in enumerate(modes):
        ys = [100 * r["share"] for r in reps(runs, mode=m)]
        ax1.plot([i] * len(ys), ys, "k.", markersize=4)
    ax1.set_xticks(range(len(modes)), labels, fontsize=7)
    ax1.set_ylabel("sysbench tps, % of baseline")
    ax1.set_ylim(0, max(110, max(100 * r["share"] for r in runs) + 5))
    ax1.set_title("throughput during the backup (median, dots: reps)", fontsize=9)
    # one run per mode, the one with the median share: tps over time from the backup's start
    for m in modes:
        xs = sorted(reps(runs, mode=m), key=lambda r: r["share"])
        r = xs[(len(xs) - 1) // 2]
        ts = [p for p in r["series"] if p[0] <= r["window_seconds"] + 1]
        ax2.plot([p[0] for p in ts], [p[1] for p in ts], color=IMPACT_COLORS[m], linewidth=1,
                 label=impact_label(doc, m))
        if m != "none":
            ax2.axvline(r["window_seconds"], color=IMPACT_COLORS[m], linestyle=":", linewidth=1)
    ax2.axvline(0, color="black", linewidth=0.8)
    ax2.set_xlabel("seconds since the backup started (dotted: it ended)")
    ax2.set_ylabel("sysbench tps (per second)")
    ax2.set_ylim(0, ax2.get_ylim()[1] * 1.3)
    ax2.set_title("one run of each (the median one)", fontsize=9)
    ax2.legend(fontsize=7, loc="upper right", ncol=2)
    return out + save_chart(fig, name)


def section_stream(doc, name):
    runs = doc["runs"]
    out = [f"## Streaming a backup to /dev/null ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/stream_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}. "
               "Both tools with --parallel=4; the single stream (stdout) and each of xbak's FIFO streams are read by one `wc -c`.")
    out.append("")
    base = reps(runs, tool="mariabackup")
    mb = median([r["seconds"] for r in base]) if base else None
    out.append("| tool | compression | streams | s (median, reps) | vs mariabackup | vs 1 stream | CPU s | peak RSS | MiB streamed |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["tool"], r["compress"], r["streams"]) for r in runs}, key=lambda k: (k[0] != "mariabackup", k[1], k[2]))
    spreads = []
    for tool, comp, n in keys:
        xs = reps(runs, tool=tool, compress=comp, streams=n)
        t = median([r["seconds"] for r in xs])
        ratio = f"{mb / t:.2f}x" if mb else "-"
        one = reps(runs, tool=tool, compress=comp, streams=1)
        vs1 = f"{(t / median([r['seconds'] for r in one]) - 1) * 100:+.1f}%" if one and tool == "xbak" else "-"
        if len(xs) > 2:
            spreads.append(median([abs(r["seconds"] - t) for r in xs]) / t)
        out.append(f"| {tool} | {comp} | {n} | {t:.2f} ({fmt_reps(xs)}) | {ratio} | {vs1} | "
                   f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB | "
                   f"{median([r['bytes'] for r in xs]) / 1048576:.0f} |")
    out.append("")
    if spreads:
        out.append(f"\"vs 1 stream\" is the time against the single stream with the same compression (negative: faster). "
                   f"The repetitions of one configuration lie a median {median(spreads) * 100:.1f}% from their median "
                   "(median absolute deviation, over all configurations): differences between stream counts smaller "
                   "than that are not resolved by this run. The order of the stream counts turns every repetition.")
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
    return out + save_chart(fig, name)


def section_encrypt(doc, name):
    runs = doc["runs"]
    d = doc["dataset"]
    out = [f"## Encrypted backups ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/encrypt_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}; "
               f"{doc['versions']['openssl']}. A full backup of {d['sysbench_tables']} sysbench tables of "
               f"{d['rows']:,} rows, --parallel=4, streamed to stdout and counted by `wc -c`; `--encrypt` with "
               "--encrypt-threads=2. The rival encrypts the same stream in a pipe with `openssl enc -aes-256-ctr` "
               "(unauthenticated, so cheaper than an AEAD; Percona's xbcrypt is not packaged for Debian 12). "
               "Target: xbak --encrypt at most 5% slower than without.")
    out.append("")
    out.append("| variant | compression | s (median, reps) | vs plain | vs openssl pipe | CPU s | peak RSS | MiB streamed |")
    out.append("|---|---|---|---|---|---|---|---|")
    for comp in ("none", "zstd"):
        plain = reps(runs, variant="plain", compress=comp)
        pm = median([r["seconds"] for r in plain]) if plain else None
        pipe = reps(runs, variant="xbak-openssl", compress=comp)
        om = median([r["seconds"] for r in pipe]) if pipe else None
        for v in ("plain", "aes256", "chacha20", "xbak-openssl", "mariabackup-openssl"):
            xs = reps(runs, variant=v, compress=comp)
            if not xs:
                continue
            t = median([r["seconds"] for r in xs])
            vs_plain = f"{(t / pm - 1) * 100:+.1f}%" if pm and v != "plain" else "-"
            vs_pipe = f"{(t / om - 1) * 100:+.1f}%" if om and v in ("aes256", "chacha20") else "-"
            out.append(f"| {v} | {comp} | {t:.2f} ({fmt_reps(xs)}) | {vs_plain} | {vs_pipe} | "
                       f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB | "
                       f"{median([r['bytes'] for r in xs]) / 1048576:.0f} |")
    out.append("")
    out.append("CPU s is the whole pipeline's (the backup, and the openssl process of a pipe). The cipher's own speed "
               "per core is micro_bench's `BM_Seal`/`BM_Open` rows above.")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    labels, ys = [], []
    for comp in ("none", "zstd"):
        for v in ("plain", "aes256", "chacha20", "xbak-openssl", "mariabackup-openssl"):
            xs = reps(runs, variant=v, compress=comp)
            if xs:
                labels.append(f"{v}\n{comp}")
                ys.append(median([r["seconds"] for r in xs]))
    ax.bar(range(len(ys)), ys)
    ax.set_xticks(range(len(ys)))
    ax.set_xticklabels(labels, rotation=60, fontsize=7)
    ax.set_ylabel("seconds")
    fig.tight_layout()
    return out + save_chart(fig, name)


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
    if doc.get("listing"):
        li = doc["listing"]
        out.append(f"### list and expire: {li['backups']:,} backups, {li['objects']:,} objects")
        out.append("")
        out.append(f"Chains of a full and 9 incrementals, each put by xbcloud ({li['objects'] // li['backups']} objects: "
                   f"4 files with their sidecars, the started marker and the manifest). `xbcloud list` made "
                   f"{li['xbcloud_requests']:,} "
                   "requests in all (16 in flight): one ranged GET of each manifest's head, a listing of the levels "
                   "that are not backups. The rivals list every object (`aws s3 ls --recursive`, `rclone lsf -R`), "
                   "which is what a user has without xbcloud list, and know nothing of chains or completeness.")
        out.append("")
        out.append("| command | s (median, reps) | vs aws s3 ls | vs rclone lsf | CPU s | peak RSS |")
        out.append("|---|---|---|---|---|---|")
        rival = {t: median([r["seconds"] for r in reps(runs, op="list", tool=t)]) for t in ("aws", "rclone")
                 if reps(runs, op="list", tool=t)}
        names = {("list-json", "xbcloud"): "xbcloud list --json", ("list", "xbcloud"): "xbcloud list",
                 ("expire-dry-run", "xbcloud"): "xbcloud expire --retain-full=10 --dry-run",
                 ("list", "aws"): "aws s3 ls --recursive", ("list", "rclone"): "rclone lsf -R"}
        for (op, tool), label in names.items():
            xs = reps(runs, op=op, tool=tool)
            if not xs:
                continue
            t = median([r["seconds"] for r in xs])
            vs = [f"{rival[k] / t:.1f}x" if k in rival and tool == "xbcloud" else "-" for k in ("aws", "rclone")]
            out.append(f"| `{label}` | {t:.2f} ({fmt_reps(xs)}) | {vs[0]} | {vs[1]} | "
                       f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
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
    out.append("Reading the numbers. **put memory:** put holds the objects it has read and not yet stored, "
               "at most (`--parallel` + 2) × `--read-buffer-size` (10 MiB); each PUT must hold its whole object "
               "(its Content-MD5 goes before the body), so the peak grows with `--parallel` when the store is "
               "slower than the stream; put also computes the MD5 of each 1 MiB piece of every object for the "
               "manifest, in the same vector pass as the object's MD5 (no extra time where vector lanes exist). "
               "**get** checks every byte before writing it, and MD5 is most of its CPU: one MD5 cannot run "
               "faster than its chain of dependent steps (0.6-0.7 GB/s here), while 8 messages hashed together "
               "in vector lanes cost about what one does. get checks each 1 MiB piece against its MD5 in the "
               "manifest as it arrives, 8 pieces of any objects in one pass, and writes verified pieces at once; "
               "what is received and not yet written stays within a budget of max(16 MiB, `--parallel` MiB) "
               "(plus 14 MiB of libraries), so memory no longer grows with the object size, and more requests "
               "than the budget feeds (about 4 MiB each) only wait. `rclone cat` streams one object by one "
               "request and checks nothing; on 2 cores shared with MinIO, CPU decides, and get's check costs it "
               "about 0.5 CPU-seconds per GiB more than rclone. (Backups without piece MD5s, from before "
               "manifest version 2, are checked object by object and hold up to 8 whole objects.)")
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
    return out + save_chart(fig, name)


def section_prepare(doc, name):
    runs = doc["runs"]
    out = [f"## Incremental prepare: many small deltas ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/prepare_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}. "
               f"{doc['tables']} tables, one row changed in each: {doc['deltas']} `.delta` files, "
               f"{doc['delta_bytes'] / 1048576:.1f} MiB. Each run starts from a fresh copy of the same prepared full backup. "
               "Both tools apply the deltas and then the incremental's redo log in one command (before "
               "xbak had its own redo apply, older runs timed its delta step alone and mariabackup's redo after it).")
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
        what = "deltas" if redo else "deltas + redo"
        out.append(f"| xbak --prepare --incremental-dir ({what}) | {p} | {t:.2f} ({fmt_reps(xs)}) | {ratio} | {tot} | "
                   f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
    if redo:
        out.append(f"| mariabackup --prepare (redo only, after xbak) | 1 | {redot:.2f} ({fmt_reps(redo)}) | | | "
                   f"{median([r['cpu_seconds'] for r in redo]):.2f} | {max(r['peak_rss_kb'] for r in redo) / 1024:.0f} MiB |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ps = sorted({r["parallel"] for r in runs if r["tool"] == "xbak"})
    ax.plot(ps, [median([r["seconds"] for r in reps(runs, tool="xbak", parallel=p)]) for p in ps], marker="o",
            label="xbak: deltas + redo" if not redo else "xbak: delta apply")
    if mbt:
        ax.axhline(mbt, color="grey", linestyle="--", label="mariabackup: deltas + redo")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("--parallel")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend()
    return out + save_chart(fig, name)


def section_micro(doc, name):
    runs = doc["runs"]
    ctx = doc.get("context", {})
    out = [f"## Checksums, compression and encryption on one core, next to memcpy ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/run{' --quick' if doc['quick'] else ''} --only micro` (Google Benchmark, "
               f"`benchmarks/micro/micro_bench.cc`, {doc.get('build_type', 'Release')} build). "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz "
               f"(as reported). One thread, the buffer in cache for 64 KiB, mostly not for 1 MiB. GB/s is 10^9 bytes "
               "of input per second (for decompression: of output). Compression input is synthetic rows "
               "(about 2:1 under zstd, 1.5:1 under lz4); the paths are the ones xbak runs: CRC-32C for InnoDB pages "
               "and redo and CRC-32 for xbstream chunks and binlog events (Intel ISA-L: carry-less multiplication, "
               "chosen at run time; zlib's crc32, which xbstream used before, beside it), OpenSSL EVP for MD5 (S3 Content-MD5, ETags, "
               "sidecars) and SHA-256 (SigV4), `storage/md5_multi`'s multi-buffer MD5 over 2 or 8 buffers at once "
               "(xbcloud get's object check; GB/s counts all buffers), the frame settings of `--compress=zstd|lz4`, "
               "and `--encrypt`'s chunks sealed and opened by `crypt::FileCipher` (AES-256-GCM, ChaCha20-Poly1305; "
               "a cipher context per chunk included; target 2 GB/s per core).")
    out.append("")
    by = {}
    labels = {}
    for r in runs:
        by.setdefault(r["name"], []).append(r["gb_per_second"])
        if r.get("label"):
            labels[r["name"]] = r["label"]
    ops = []
    for n in by:
        op = n.split("/bytes:")[0] + ("/level:" + n.split("level:")[1] if "level:" in n else "")
        if op not in ops:
            ops.append(op)

    def cell(op, size):
        key = op.split("/level:")[0] + f"/bytes:{size}" + (f"/level:{op.split('level:')[1]}" if "level:" in op else "")
        return by.get(key), labels.get(key, "")

    mc = {size: median(by.get(f"BM_Memcpy/bytes:{size}", [0])) for size in (65536, 1048576)}
    out.append("| operation | 64 KiB: GB/s (reps) | of memcpy | 1 MiB: GB/s (reps) | of memcpy | note |")
    out.append("|---|---|---|---|---|---|")
    for op in ops:
        row = [op.replace("BM_", "").replace("/level:", " level ")]
        note = ""
        for size in (65536, 1048576):
            xs, lab = cell(op, size)
            note = note or lab
            if not xs:
                row += ["-", "-"]
                continue
            m = median(xs)
            row.append(f"{m:.2f} ({', '.join(f'{x:.2f}' for x in xs)})")
            row.append("-" if op == "BM_Memcpy" else f"{100 * m / mc[size]:.1f} %" if mc[size] else "-")
        row.append(note)
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 0.32 * len(ops) + 1.2))
    names = [op.replace("BM_", "").replace("/level:", " -") for op in ops]
    vals = [median(cell(op, 1048576)[0] or [0]) for op in ops]
    ax.barh(names[::-1], vals[::-1], color=["tab:grey" if n == "Memcpy" else "tab:blue" for n in names[::-1]])
    ax.set_xscale("log")
    ax.set_xlabel("GB/s on one core, 1 MiB buffers (log scale)")
    return out + save_chart(fig, name)


def section_redo(doc, name):
    runs = doc["runs"]
    out = [f"## Redo apply: xbak --prepare against mariabackup --prepare ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/redo_bench.sh{' --quick' if doc['quick'] else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs; {doc['versions']['mariabackup']}. "
               f"One full backup taken under write load holding {doc['redo_bytes'] / 1048576:.0f} MiB of redo, "
               f"prepared on fresh copies by both tools with --use-memory={doc['use_memory']}; the page cache is warm.")
    out.append("")
    mb = reps(runs, tool="mariabackup")
    mbt = median([r["seconds"] for r in mb]) if mb else None
    out.append("| tool | --parallel | s (median, reps) | vs mariabackup | CPU s | peak RSS |")
    out.append("|---|---|---|---|---|---|")
    keys = sorted({(r["tool"], r["parallel"]) for r in runs}, key=lambda k: (k[0] != "mariabackup", k[1]))
    for tool, p in keys:
        xs = reps(runs, tool=tool, parallel=p)
        t = median([r["seconds"] for r in xs])
        ratio = f"{mbt / t:.2f}x" if mbt else "-"
        out.append(f"| {tool} | {p} | {t:.2f} ({fmt_reps(xs)}) | {ratio} | "
                   f"{median([r['cpu_seconds'] for r in xs]):.2f} | {max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ps = sorted({r["parallel"] for r in runs if r["tool"] == "xbak"})
    ax.plot(ps, [median([r["seconds"] for r in reps(runs, tool="xbak", parallel=p)]) for p in ps], marker="o",
            label="xbak --prepare")
    if mbt:
        ax.axhline(mbt, color="grey", linestyle="--", label="mariabackup --prepare")
    ax.set_xlabel("--parallel")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.legend()
    return out + save_chart(fig, name)


def restore_reps(r):
    runs = r.get("runs")
    if not runs or len(runs.get("xbak_s", [])) < 2:
        return "One repetition."
    fmt = lambda v: ", ".join(f"{x:.2f}" for x in v)
    return (f"The ways were run in turn, {len(runs['xbak_s'])} times each; the table gives the medians "
            f"(xbak {fmt(runs['xbak_s'])} s; anchor {fmt(runs['anchor_s'])} s; floor {fmt(runs['floor_s'])} s).")


def section_restore(doc, name):
    r, d = doc["results"], doc["dataset"]
    out = [f"## Restore from object storage: xbak --restore against the mariabackup pipeline "
           f"({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    reps = len(r.get("runs", {}).get("xbak_s", [])) or 1
    out.append(f"Command: `benchmarks/restore_bench.sh{' --quick' if doc['quick'] else ''}"
               f"{f' --reps {reps}' if reps > 1 else ''}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cores']} cores; xbak {doc['xbak']}. "
               f"A sysbench database of {d['sysbench_tables']} x {d['rows_per_table']:,} rows, {d['chain']}, "
               f"each streamed by `xbak --backup --stream | xbcloud put` into a local MinIO "
               f"({d['stream_bytes'] / 1048576:,.0f} MiB of streams). Each way back starts with the page cache "
               f"dropped and ends with a sync; both restored datadirs start, pass CHECK TABLE and have equal "
               f"CHECKSUM TABLE for every table. " + restore_reps(r))
    out.append("")
    out.append("| way | s | vs anchor | vs floor | peak RSS |")
    out.append("|---|---|---|---|---|")
    a, f = r["anchor_s"], r["floor_s"]
    out.append(f"| floor: `xbcloud get` of each stream into a file | {f:.2f} | {a / f:.2f}x | 1.00x | - |")
    out.append(f"| xbak: `xbcloud get` into pipes, `xbak --restore --from-stream ... --parallel={doc['parallel']}` "
               f"| {r['xbak_restore_s']:.2f} | {a / r['xbak_restore_s']:.2f}x | {r['xbak_restore_s'] / f:.2f}x "
               f"| {r['xbak_peak_rss_kb'] / 1024:.0f} MiB |")
    out.append(f"| anchor: `xbcloud get \\| mbstream -x` each, `mariabackup --prepare` per step, `--copy-back` "
               f"| {a:.2f} | 1.00x | {a / f:.2f}x | {r['anchor_largest_peak_rss_kb'] / 1024:.0f} MiB (largest step) |")
    out.append("")
    os.makedirs(IMG, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3))
    labels = ["floor", "xbak --restore", "mariabackup pipeline"]
    ax.barh(labels, [f, r["xbak_restore_s"], a], color=["grey", "tab:blue", "tab:orange"])
    ax.set_xlabel("seconds (lower is better)")
    return out + save_chart(fig, name)

STEP_TEXT = {"full": "full backup", "full-stream": "full backup, xbstream to /dev/null",
             "incremental": "incremental backup", "floor": "inc. prepare floor",
             "inc-prepare": "incremental prepare", "copy-back": "copy-back", "restore": "one-pass restore"}


def section_scale(doc, name):
    rows = doc.get("rows", 5)
    if rows == 5:
        title, args = "Many tables: every step at 20,000 and 100,000 tables", ""
    else:
        tables = ", ".join(f"{sc['tables']:,}" for sc in doc["scales"])
        title = f"Fewer, larger deltas: {tables} tables of {rows:,} rows, every 50th row changed"
        args = f" --tables \"{' '.join(str(sc['tables']) for sc in doc['scales'])}\" --rows {rows}"
    out = [f"## {title} ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    if rows != 5:
        out.append(f"The same steps as the previous section's, on tables of {rows:,} rows of about 230 bytes (about 65 "
                   f"to a page) with every 50th row changed: the seeds' other shape, fewer deltas of a few MB "
                   f"each (issue 41).")
        out.append("")
    out.append(f"Command: `benchmarks/scale_bench.sh{' --quick' if doc['quick'] else ''}{args}`. "
               f"Machine: {doc['machine']['arch']}, {doc['machine']['cpus']} CPUs, open-files limit "
               f"{doc['machine']['open_files_limit']:,} (hard; it cannot be raised in this container); xbak "
               f"{doc.get('xbak', '?')}; {doc['versions']['mariabackup']}. Per scale: N tables of "
               f"{'5 rows (`sb_load_many`)' if doc.get('rows', 5) == 5 else str(doc['rows']) + ' rows of about 230 bytes'}, a full backup by each tool at each --parallel (page cache dropped first; from "
               f"2026-11-29 with its floors: the datadir's files, but the redo log and ibtmp1, read and written, "
               f"and for xbak's `--stream=xbstream > /dev/null` read only, by `benchmarks/floor/xbak_copy_floor`), "
               f"{'one row' if doc.get('rows', 5) == 5 else 'every 50th row'} changed in every table and flushed, an incremental by each tool from its own full; then "
               f"xbak's chain, prepared on fresh copies: the floor (`benchmarks/floor/xbak_delta_floor`: every "
               f"delta's pages written at their offsets, each file's writeback started when it is done, as xbak does, "
               f"then one syncfs, nothing else; since 2026-11-29 its reads asked of the disk ahead, 32 at a time, as "
               f"xbak's are, the incremental's other files (table definitions, its redo log and metadata) written "
               f"over the base's, and its listing no longer resolving every path on disk, which had made it 1-3 s "
               f"slower at 20,000 tables: figures of record before that date are against a floor that was too high), `xbak --prepare "
               f"--incremental-dir`, and `mariabackup --prepare --incremental-dir` (which applies deltas one by "
               f"one whatever --parallel says: run once); then `--copy-back` of the prepared chain into an empty "
               f"datadir, and its floor (`benchmarks/floor/xbak_copy_floor`: every file read and written, largest "
               f"first, zeros left as holes, reads asked ahead as xbak's are, one syncfs; from 2026-11-29; from "
               f"xbak 67d7cbc on, the floors and xbak neither read nor write what reads as zeros, holes and "
               f"preallocated space: the tables of the wide shape are 70% preallocated); and "
               f"`xbak --restore` of the chain as taken into an empty datadir, against the floor of copying the "
               f"full backup's files then writing the incremental's pages into them (the two floors in turn; "
               f"from 2026-11-29, where the scale has those rows). "
               f"fds = the most descriptors the process held at once (sampled every 50 ms). One "
               f"repetition per row. Copy-back is timed until its data is on disk (`&& sync`: mariabackup does "
               f"not sync, xbak does), from a cold page cache: dropped after the last row's files were deleted "
               f"(while their inode table blocks are cached, ext4 skips recently deleted inodes one by one at "
               f"every file creation, which the 100,000-table rows measured before). The incremental prepare and its floor "
               f"run on fresh copies, from a cold page cache (dropped first) where the scale says so, else in the page "
               f"cache (as right after a download: the figures before 2026-11-29); xbak's delta step is its log's "
               f"(everything before the redo step).")
    out.append("")
    for sc in doc["scales"]:
        n = sc["tables"]
        out.append(f"### {n:,} tables ({sc['deltas']:,} deltas, {sc['delta_bytes'] / 1048576:,.0f} MiB; full backup "
                   f"{sc['full_bytes'] / 1048576:,.0f} MiB; tables created in {sc['create_s']:.0f} s; incremental "
                   f"prepare {sc.get('inc_prepare_cache', 'warm')})")
        out.append("")
        if sc.get("date", doc["date"]) != doc["date"] or sc.get("xbak", doc.get("xbak")) != doc.get("xbak"):
            # A record merged from several runs (benchmarks/merge_scale.py): each scale says its own.
            out.append(f"This scale was measured by another run of the same command: {sc.get('date', '?')}, xbak "
                       f"{sc.get('xbak', '?')} (the record merges runs scale by scale: benchmarks/merge_scale.py).")
            out.append("")
        out.append("| step | tool | --parallel | s | CPU s | peak RSS | peak fds | result |")
        out.append("|---|---|---|---|---|---|---|---|")
        for r in [r for r in doc["runs"] if r["tables"] == n]:
            res = "ok" if r["rc"] == 0 else "FAILED: " + r.get("error", "")[-110:].replace("|", "\\|")
            if r["rc"] == 0 and "delta_step_seconds" in r:
                res += f" (delta step {r['delta_step_seconds']:.2f} s)"
            out.append(f"| {STEP_TEXT.get(r['step'], r['step'])} | {r['tool']} | {r['parallel']} | {r['seconds']:.2f} | "
                       f"{r['cpu_seconds']:.2f} | {r['peak_rss_kb'] / 1024:.0f} MiB | {r['peak_fds']:,} | {res} |")
        out.append("")
        if sc.get("partial"):
            out.append("This scale's run was stopped after the incremental prepare (for time): no copy-back "
                       "rows in it.")
            out.append("")
        rt = sc.get("ratios", {})
        if rt:
            out.append("Ratios (best --parallel of each): " + "; ".join(f"{k.replace('_', ' ')} {v}x" for k, v in rt.items()))
            out.append("")
    os.makedirs(IMG, exist_ok=True)
    steps = ["full", "incremental", "inc-prepare", "copy-back"]
    scales = [sc["tables"] for sc in doc["scales"]]
    fig, axes = plt.subplots(1, len(scales), figsize=(5 * len(scales), 3), squeeze=False)
    for ax, n in zip(axes[0], scales):
        def best(step, tool):
            ok = [r["seconds"] for r in doc["runs"] if r["tables"] == n and r["step"] == step and r["tool"] == tool and r["rc"] == 0]
            return min(ok) if ok else 0
        x = range(len(steps))
        ax.bar([i - 0.2 for i in x], [best(s, "xbak") for s in steps], 0.4, label="xbak", color="tab:blue")
        ax.bar([i + 0.2 for i in x], [best(s, "mariabackup") for s in steps], 0.4, label="mariabackup (0: failed)",
               color="tab:orange")
        ax.set_xticks(list(x))
        ax.set_xticklabels([STEP_TEXT[s].replace(" ", "\n", 1) for s in steps], fontsize=7)
        ax.set_title(f"{n:,} tables", fontsize=9)
        ax.set_ylabel("seconds, best --parallel")
        ax.legend(fontsize=7)
    return out + save_chart(fig, name)


SUITE_TEXT = """## The suite: one command, one JSON file, charts

```sh
benchmarks/run --quick                    # CI: every suite, a few minutes per suite
benchmarks/run --full --publish           # release notes: full runs, then this page and its charts
benchmarks/run --compare A.json B.json --threshold 10   # exit 1 if any figure got >10 % worse
```

`benchmarks/run` builds xbak, xbcloud and the microbenchmarks (Release, `build-bench/`), then runs
every suite below in one go, each against its rivals in the same run (mariabackup and mbstream,
`aws s3 cp`, rclone), and writes one JSON file (`--out`, default `.work/bench-run/suite.json`): the
machine (arch, CPU model, cores, memory), the versions (xbak's `git describe`, mariabackup, aws,
rclone, the compiler, zlib/zstd/lz4/OpenSSL/ISA-L), every suite's raw results and a flat list of
`figures`, each with all its repetitions, its median, which way is better and its ratios to the
rivals (above 1: xbak is better). Charts land next to it (`img/`); `--publish` updates this page.
Datasets that take long to make are cached in `~/.cache/xbak/bench` (`XBAK_BENCH_CACHE`).

`--compare A.json B.json` prints B's median over A's for every figure the two files share and flags
each one that got worse by more than `--threshold` percent (a time up, a throughput down); its exit
status is 1 when anything regressed, so a CI job can fail on it. `tests/bench/t_compare.sh` checks
that it passes two identical results and flags a build of the microbenchmarks at -O0 (the
multi-buffer MD5 figure, our own AVX2 code, drops several-fold). Comparing an x86-64 result with an
AArch64 one works the same way; the flags then say where one machine is slower.

On AArch64 the same code runs with ISA-L's AArch64 CRC code (PMULL and CRC32 instructions,
chosen at run time) and OpenSSL's EVP for MD5 and SHA-256.
`scripts/cross-aarch64.sh` (pass 4 of `scripts/run-tests.sh`, `--arm64`) cross-compiles the layers
with Debian's g++-aarch64-linux-gnu and the arm64 multiarch -dev packages and runs their unit tests
under qemu-user: `unit_util` (the CRC-32C and CRC-32 vectors, and every length up to 600 bytes
against the bitwise definition; the script also checks that it is linked with ISA-L) and every
other layer's suite (`unit_innodb`, `unit_stream`, `unit_sink`, `unit_storage` with the RFC 1321
MD5 vectors, `unit_cloud`, `unit_backup`, `unit_prepare`, `unit_restore`, `unit_verify`,
`unit_pitr`, ...; libmariadb-dev and ISA-L, which cannot be installed for arm64 next to their amd64
twins, are unpacked beside the build). Tests that need a running server stay on x86-64. qemu timings say
nothing about real ARM hardware, so numbers for AArch64 come only from running `benchmarks/run`
on an ARM machine (e.g. a CI arm64 runner), never from the emulator.
"""


SECTIONS = {"micro-bench": section_micro, "redo-bench": section_redo, "backup-bench": section_backup, "stream-bench": section_stream,
            "encrypt-bench": section_encrypt, "xbcloud-bench": section_xbcloud,
            "prepare-bench": section_prepare, "impact-bench": section_impact, "restore-bench": section_restore,
            "scale-bench": section_scale, "scale-bench-wide": section_scale,
            "stores-bench": lambda doc, name: section_stores(doc, name, sys.modules[__name__]),
            "pitr-bench": lambda doc, name: section_pitr(doc, name, sys.modules[__name__])}


def on_server(section, server):
    """A section measured against another server (XBAK_SERVER): said in its title and command."""
    if not server:
        return section
    label = server.replace("mariadb-", "MariaDB ")
    out = [section[0] + f" — {label}"] if section else []
    for line in section[1:]:
        out.append(line.replace("Command: `", f"Command: `XBAK_SERVER={server} ", 1))
    return out


def main():
    lines = ["# Benchmarks", "",
             "Every figure here was produced by a script in `benchmarks/`, which starts its own servers on "
             "127.0.0.1 and measures xbak side by side with the reference tool in the same run. "
             "This page is generated by `benchmarks/report.py` from the JSON files in `docs/results/`; "
             "timings on a shared 2-core machine are noisy, so every repetition is listed.", "",
             SUITE_TEXT]
    order = ["micro-bench"] + sorted(k for k in SECTIONS if k != "micro-bench")
    def place(f):  # a suite's other-server runs right after it
        base = f[:-5].partition("@")[0]
        return (order.index(base) if base in order else len(order), f)

    for fn in sorted(os.listdir(RES), key=place):
        if not fn.endswith(".json"):
            continue
        name = fn[:-5]
        doc = json.load(open(os.path.join(RES, fn)))
        base, _, server = name.partition("@")  # NAME@mariadb-11.8: the suite run against that server
        if base in SECTIONS:
            lines += on_server(SECTIONS[base](doc, name), server)
    open(OUT, "w").write("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
