#!/usr/bin/env bash
# MariaDB's own test suite for mariabackup (mysql-test/suite/mariabackup, from Debian's
# mariadb-test and mariadb-test-data packages, the server's version) run with xbak in
# mariabackup's place: mtr takes the tools from --client-bindir, a directory of links to the
# host's clients where mariabackup, mariadb-backup and mbstream are xbak. Nothing of the suite or
# of mtr is edited or filtered: every test a release server can run, with every combination;
# mtr itself skips those that need a debug build, --big-test, qpress, another OS or engine.
#
#   tests/peer/run-mariabackup-suite.sh [--control] [--parallel=N] [--big-test] [TEST ...]
#     --control    the real mariabackup in the same harness (a harness problem is not xbak's)
#     --parallel   mtr workers (default: the number of CPUs)
#     TEST ...     only these tests (e.g. full_backup incremental_backup), default the whole suite
#
# Environment: XBAK (the xbak binary; default ./build/xbak), XBAK_WORK (scratch space, default
# /tmp), XBAK_PEER_VARDIR (mtr's --vardir; default under XBAK_WORK), XBAK_PEER_USER (the user mtr
# and its servers run as; default, when run as root: nobody, as the suite expects an unprivileged
# user: data_directory checks that an unreadable ibdata1 fails the backup, which root reads
# anyway; empty: the current user). Prints one line per failed
# run, then "N passed, M failed, K skipped"; exit status 0 only if every failure is one that
# tests/peer/expected-failures.txt lists (with --control, the real mariabackup: only those it
# marks as the real mariabackup's too).
# The expected failures, each with its reason, are explained in docs/mariabackup.md.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
control=0
parallel=$(nproc)
mtr_extra=()
tests=()
for a in "$@"; do
  case "$a" in
    --control) control=1 ;;
    --parallel=*) parallel=${a#--parallel=} ;;
    --big-test) mtr_extra+=(--big-test) ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run-mariabackup-suite: unknown option '$a'" >&2; exit 2 ;;
    *) tests+=("mariabackup.$a") ;;
  esac
done

mtr_dir=/usr/share/mysql/mysql-test
if [ ! -x "$mtr_dir/mariadb-test-run.pl" ] || [ ! -d "$mtr_dir/suite/mariabackup" ]; then
  echo "run-mariabackup-suite: installing mariadb-test (mtr and suite/mariabackup)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mariadb-test >&2
fi

xbak=${XBAK:-$repo/build/xbak}
[ "$control" = 1 ] || [ -x "$xbak" ] || { echo "run-mariabackup-suite: no xbak at $xbak (build first)" >&2; exit 2; }
work=${XBAK_WORK:-/tmp}
label=$([ "$control" = 1 ] && echo mariabackup || echo xbak)
bindir=$work/peer-bindir-$label
peer_user=${XBAK_PEER_USER-}
if [ -z "${XBAK_PEER_USER+set}" ] && [ "$(id -u)" = 0 ]; then peer_user=nobody; fi
run_as=()
home=$work/peer-home-$label
if [ -n "$peer_user" ]; then
  [ "$(id -u)" = 0 ] || { echo "run-mariabackup-suite: XBAK_PEER_USER needs root (runuser)" >&2; exit 2; }
  # A directory of the user's own, with mtr's vardir inside it (mtr removes and creates that).
  rm -rf "$home"
  mkdir -p "$home"
  chown "$peer_user:" "$home"
  run_as=(runuser -u "$peer_user" -- env HOME="$home" TMPDIR="$home")
  vardir=${XBAK_PEER_VARDIR:-$home/var}
  if [ -n "${XBAK_PEER_VARDIR:-}" ]; then rm -rf "$vardir"; mkdir -p "$vardir"; chown "$peer_user:" "$vardir"; fi
else
  vardir=${XBAK_PEER_VARDIR:-$work/peer-var-$label}
fi
rm -rf "$bindir"
[ -n "$peer_user" ] || rm -rf "$vardir"
mkdir -p "$bindir"
# Every client mtr may look for, as the host has it; then the tool under test in mariabackup's
# place. xbak answers to each of the three names as that program does.
for f in /usr/bin/*; do ln -s "$f" "$bindir/${f##*/}"; done
if [ "$control" != 1 ]; then
  # A copy: a rebuild of xbak while the suite runs does not change the tool under test.
  cp "$xbak" "$bindir/xbak"
  for name in mariabackup mariadb-backup mbstream; do ln -sf xbak "$bindir/$name"; done
fi

log=$work/peer-$label.log
echo "run-mariabackup-suite: $label in mariabackup's place, $parallel workers, as ${peer_user:-$(id -un)}, log $log" >&2
set +e
(cd "$mtr_dir" && "${run_as[@]}" ./mariadb-test-run.pl --client-bindir="$bindir" --vardir="$vardir" \
  --parallel="$parallel" --force --max-test-fail=0 --retry=0 --suite=mariabackup \
  "${mtr_extra[@]}" "${tests[@]}") > "$log" 2>&1
rc=$?
set -e

# mtr prints one result line per test and combination: "mariabackup.NAME 'COMB' [w1] [ RESULT ]".
# With xbak, the failures are compared with tests/peer/expected-failures.txt (each explained in
# docs/mariabackup.md): one not listed there fails this script.
expected=$repo/tests/peer/expected-failures.txt
if [ "$control" = 1 ]; then
  grep 'the real mariabackup fails it too' "$expected" > "$work/peer-control-expected.txt" || true
  expected=$work/peer-control-expected.txt
fi
summary=0
python3 - "$log" "$label" "$expected" <<'EOF' || summary=1
import re, sys
log, label, expected_file = sys.argv[1:4]
res = {}
pat = re.compile(r"^(mariabackup\.\S+(?: '[^']*')?)\s+(?:w\d+\s+)?\[ (pass|fail|skipped|disabled) \]")
for line in open(log, errors="replace"):
    m = pat.match(line)
    if m:
        res[m.group(1)] = m.group(2)
expected = {}
for line in open(expected_file):
    if line.strip() and not line.startswith("#"):
        name, _, why = line.rstrip("\n").partition("\t")
        expected[name] = why
count = lambda r: sum(1 for v in res.values() if v == r)
failed = sorted(k for k, v in res.items() if v == "fail")
ran = count("pass") + len(failed)
for k in failed:
    print(f"FAILED {k}" + (f"  (expected: {expected[k]})" if k in expected else "  (NOT EXPECTED)"))
for k in sorted(k for k in expected if res.get(k) == "pass"):
    print(f"PASSES NOW {k}: remove it from tests/peer/expected-failures.txt and docs/mariabackup.md")
n_expected = len([k for k in failed if k in expected])
share = f"; {100.0 * count('pass') / ran:.1f}% of the runs pass" if ran else ""
print(f"{label}: {count('pass')} passed, {len(failed)} failed ({n_expected} expected), "
      f"{count('skipped') + count('disabled')} skipped{share}")
sys.exit(1 if len(failed) > n_expected or not res else 0)
EOF
[ "$summary" = 0 ] || exit 1
# mtr's own status: failures are judged above; anything else (a harness error) fails the run.
if [ "$rc" != 0 ] && ! grep -q "there were failing test cases" "$log"; then tail -20 "$log" >&2; exit 1; fi
