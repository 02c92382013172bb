"""The stores-bench section of docs/benchmarks.md (benchmarks/stores_bench.sh): xbcloud against
rclone on Azure Blob Storage (Azurite) and Google Cloud Storage (fake-gcs-server). A module of its
own so that report.py stays one screenful per section; report.py passes itself in as `h` for its
helpers (reps, median, fmt_reps, save_chart, plt, IMG)."""
import os


def section_stores(doc, name, h):
    runs = doc["runs"]
    mib = doc["bytes"] / 1048576
    out = [f"## xbcloud against rclone on Azure Blob Storage and Google Cloud Storage "
           f"({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/stores_bench.sh{' --quick' if doc['quick'] else ''}`. Machine: "
               f"{doc['machine']['arch']}, {doc['machine']['cpus']} CPUs, shared by the client and the emulator. "
               f"The same {mib:.0f} MiB xbstream, on stdin from the page cache, to Azurite "
               f"{doc['versions']['azurite']} and fake-gcs-server {doc['versions']['fake-gcs-server']} on 127.0.0.1 "
               f"(both keeping objects in memory), each through its own protocol; downloads to /dev/null. "
               f"{doc['versions']['rclone']} with its defaults (Azure: 4 MiB blocks, 16 at once; Google: one "
               "resumable upload in 8 MiB chunks). CPU and peak RSS are the client's. On loopback the emulator "
               "(single-threaded Node.js for Azurite) bounds both clients, so these figures compare the "
               "clients' cost and overheads, not the services' throughput.")
    out.append("")
    out.append("| store | op | tool | parallel | s (median, reps) | MiB/s | vs rclone | CPU s | peak RSS |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for store in ("azure", "google"):
        for op in ("put", "get"):
            xs_all = h.reps(runs, store=store, op=op)
            if not xs_all:
                continue
            rc = h.reps(xs_all, tool="rclone")
            rc_t = h.median([r["seconds"] for r in rc]) if rc else None
            for tool, par in sorted({(r["tool"], r["parallel"]) for r in xs_all}, key=lambda k: (k[0] != "xbcloud", k[1])):
                xs = h.reps(xs_all, tool=tool, parallel=par)
                t = h.median([r["seconds"] for r in xs])
                vs = f"{rc_t / t:.2f}x" if rc_t and tool == "xbcloud" else "-"
                out.append(f"| {store} | {op} | {tool} | {par} | {t:.2f} ({h.fmt_reps(xs)}) | {mib / t:.0f} | {vs} | "
                           f"{h.median([r['cpu_seconds'] for r in xs]):.2f} | "
                           f"{max(r['peak_rss_kb'] for r in xs) / 1024:.0f} MiB |")
    out.append("")
    out.append("xbcloud does more per byte than rclone here: every object is sent with its MD5, which the "
               "service checks (Azure: `Content-MD5`; Google: the multipart metadata's `md5Hash`), each file "
               "gets an `.md5` sidecar and the backup a manifest with per-MiB MD5s, and get checks every byte "
               "against them before writing it. \"vs rclone\" above 1 means xbcloud took less time. rclone's put "
               "to Google is a resumable upload in 8 MiB chunks, which fake-gcs-server serves far more slowly "
               "than one request per object: that ratio is the emulator's, and says nothing of Google itself; "
               "rclone's get checks nothing, which is most of its lead there.")
    out.append("")
    os.makedirs(h.IMG, exist_ok=True)
    fig, axes = h.plt.subplots(1, 4, figsize=(12, 3.4))
    for ax, (store, op) in zip(axes, [(s, o) for s in ("azure", "google") for o in ("put", "get")]):
        labels, vals = [], []
        for tool, par in sorted({(r["tool"], r["parallel"]) for r in h.reps(runs, store=store, op=op)},
                                key=lambda k: (k[0] != "xbcloud", k[1])):
            xs = h.reps(runs, store=store, op=op, tool=tool, parallel=par)
            labels.append(f"{tool}\n{par}" if tool == "xbcloud" else tool)
            vals.append(mib / h.median([r["seconds"] for r in xs]))
        ax.bar(labels, vals, color=["tab:blue" if l.startswith("xbcloud") else "tab:grey" for l in labels])
        ax.set_title(f"{store} {op}")
        ax.set_ylabel("MiB/s")
    return out + h.save_chart(fig, name)
