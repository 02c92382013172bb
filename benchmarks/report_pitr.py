"""The pitr-bench section of docs/benchmarks.md (benchmarks/pitr_bench.sh): the binlog replay of
xbcloud restore against mariadb-binlog | mariadb and against the binlogs handed to the server as
relay logs with its default settings; the source's throughput with binlog-push running. report.py
passes itself in as `h` for its helpers (save_chart, plt)."""


def section_pitr(doc, name, h):
    m = doc["methods"]
    gib = doc["binlog_bytes"] / 2**30
    x = m["xbak"]["seconds"]
    out = [f"## Point-in-time restore: binlog replay ({'quick' if doc['quick'] else 'full'} run, {doc['date']})", ""]
    out.append(f"Command: `benchmarks/pitr_bench.sh{' --quick' if doc['quick'] else ''}`. Machine: "
               f"{doc['machine']['arch']}, {doc['machine']['cpus']} CPUs. {gib:.2f} GiB of ROW binary logs that "
               f"sysbench oltp_write_only (8 tables of 50,000 rows, 4 threads) wrote after a full backup "
               f"(GTID {doc['from_gtid']} to {doc['to_gtid']}), replayed onto the same restored backup three ways, each "
               f"timed from a server start to its clean shutdown; every result's tables equal the source's "
               f"(CHECKSUM TABLE). {doc['server']}.")
    out.append("")
    out.append("| method | replay s | vs xbak | note |")
    out.append("|---|---|---|---|")
    notes = {"xbak": f"`xbcloud restore --latest --parallel={doc['parallel']}`: relay logs, "
                     f"{doc['parallel']} optimistic parallel workers, restore-only settings (the chain's "
                     f"restore and the download not counted: {m['xbak']['total_seconds']:.1f} s in all, "
                     f"xbcloud peak RSS {m['xbak']['peak_rss_kb'] / 1024:.0f} MiB)",
             "mysqlbinlog": "`mariadb-binlog --start-position=P FILES \\| mariadb`: one connection, the "
                            "server's default durability (innodb_flush_log_at_trx_commit=1)",
             "relay": "the binlogs as relay logs, the server's default settings (one SQL thread, "
                      "innodb_flush_log_at_trx_commit=1)"}
    for k in ("xbak", "mysqlbinlog", "relay"):
        out.append(f"| {k} | {m[k]['seconds']:.1f} | {m[k]['seconds'] / x:.2f}x | {notes[k]} |")
    out.append("")
    fig, ax = h.plt.subplots(figsize=(6, 2.4))
    names = ["xbak", "relay", "mysqlbinlog"]
    ax.barh(names, [m[k]["seconds"] for k in names], color=["#2a7", "#888", "#888"])
    ax.set_xlabel("seconds to replay (lower is better)")
    ax.set_title(f"replay of {gib:.2f} GiB of sysbench binlogs")
    out += h.save_chart(fig, "pitr-replay")
    t = doc["throughput"]
    out.append(f"Source throughput (sysbench oltp_write_only, 4 threads) with `xbcloud binlog-push --max-lag=1` "
               f"running as a service, alternated with runs without it: "
               f"{', '.join(f'{v:.0f}' for v in t['with_tps'])} tps with, "
               f"{', '.join(f'{v:.0f}' for v in t['without_tps'])} without: {t['with_over_without']:.3f} of it. "
               f"One `binlog-push --once` of the whole {gib:.2f} GiB into MinIO: {doc['archive']['push_once_seconds']:.1f} s, "
               f"peak RSS {doc['archive']['push_peak_rss_kb'] / 1024:.0f} MiB. (MinIO, the archiver and the server share "
               f"the same {doc['machine']['cpus']} cores here; against a remote store the archiver's own cost is "
               "reading, CRC32-checking and MD5-hashing the binlog once.)")
    out.append("")
    return out
