#!/usr/bin/env python3
"""Merges a scale_bench.sh result into another, scale by scale.

    benchmarks/scale_bench.sh --tables 100000 --out .work/scale-100k.json
    benchmarks/merge_scale.py docs/results/scale-bench.json .work/scale-100k.json

(scale_bench.sh writes docs/results/scale-bench.json itself unless told --out.) Every scale (table count) FROM.json has replaces the same scale of INTO.json, its rows included;
the other scales of INTO.json stay as they were. Each scale keeps the date and xbak version of the
run that measured it (the "date" and "xbak" of its own document), so a record mixing runs says so
(benchmarks/report.py prints them). Why: the 100,000-table scale alone takes about an hour, and
re-running it must not cost the other scales' rows or pass them off as measured again.
"""
import json
import os
import sys


def stamped(doc):
    for sc in doc["scales"]:
        sc.setdefault("date", doc["date"])
        sc.setdefault("xbak", doc.get("xbak", "?"))
        sc.setdefault("kernel", doc["machine"].get("kernel", "?"))
    return doc


def same_machine(a, b):
    # The kernel's build changes between sessions on the same machine; each scale records its own.
    strip = lambda m: {k: v for k, v in (m or {}).items() if k != "kernel"}
    return strip(a) == strip(b)


def main():
    if len(sys.argv) != 3:
        print("usage: benchmarks/merge_scale.py INTO.json FROM.json", file=sys.stderr)
        return 2
    into_path, from_path = sys.argv[1:3]
    into, new = stamped(json.load(open(into_path))), stamped(json.load(open(from_path)))
    # Rows are only comparable from the same machine, limits and rival: mariabackup's failures at
    # 20,000 tables come from the open-files limit.
    for key in ("benchmark", "quick", "parallel", "machine", "versions"):
        differs = not same_machine(into.get(key), new.get(key)) if key == "machine" else into.get(key) != new.get(key)
        if differs:
            print(f"merge_scale: {key} differs ({into.get(key)!r} in {into_path}, {new.get(key)!r} in {from_path})",
                  file=sys.stderr)
            return 1
    replaced = {sc["tables"] for sc in new["scales"]}
    by_tables = {sc["tables"]: sc for sc in into["scales"]}
    by_tables.update({sc["tables"]: sc for sc in new["scales"]})
    had = {sc["tables"] for sc in into["scales"]}
    order = [sc["tables"] for sc in into["scales"]] + [sc["tables"] for sc in new["scales"] if sc["tables"] not in had]
    into["scales"] = [by_tables[n] for n in order]
    into["runs"] = [r for r in into["runs"] if r["tables"] not in replaced] + new["runs"]
    into["runs"].sort(key=lambda r: order.index(r["tables"]))  # stable: each scale's rows keep their order
    into["date"], into["xbak"] = new["date"], new.get("xbak", "?")
    tmp = into_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(into, f, indent=1)
    os.replace(tmp, into_path)
    print(f"merge_scale: {sorted(replaced)} tables from {from_path} into {into_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
