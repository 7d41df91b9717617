#!/usr/bin/env bash
# End-to-end checks of graph-run and sched-profile as a user runs them.
# Usage: graph_run_and_profile.sh GRAPH_RUN SCHED_PROFILE CONFIG_DIR
set -u
run=$1
profile=$2
configs=$3
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {  # check NAME EXPECTED_EXIT COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then echo "FAIL $name: exit $got, expected $want"; cat "$tmp/err"; failures=$((failures + 1)); fi
}
py() { python3 -c "$1" || { echo "FAIL $2"; failures=$((failures + 1)); }; }

# graph-run: JSON report fields, trace, saved outputs.
check run-json 0 "$run" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope -r 3 --format json \
  -o "$tmp/run.json" --trace "$tmp/trace.json" --save-outputs "$tmp/outs"
py "
import json; r = json.load(open('$tmp/run.json'))
for k in ('config', 'backends', 'n_nodes', 'n_splits', 'time_ms', 'buffer_bytes', 'copy_bytes'): assert k in r, k
assert r['reps'] == 3 and r['n_splits'] > 1 and r['copy_bytes'] > 0
t = r['time_ms']; assert 0 < t['min'] <= t['median'] <= t['max']
assert set(r['buffer_bytes']) == {'SIM0', 'CPU'}" "run-json fields"
py "
import json; e = json.load(open('$tmp/trace.json'))['traceEvents']
spans = [x for x in e if x['ph'] == 'X']; assert len(spans) >= 3 and all(x['dur'] >= 0 for x in spans)
assert {x['args']['name'] for x in e if x['ph'] == 'M'} == {'SIM0', 'CPU'}" "trace"
[ -s "$tmp/outs/logits.npy" ] || { echo "FAIL save-outputs: no logits.npy"; failures=$((failures + 1)); }
check run-bad-config 2 "$run" -c "$tmp/missing.json"
check run-bad-device 2 "$run" -c "$configs/default.json" -b CUDA3,CPU

# sched-profile: the split table agrees with the devices, node reasons, DOT, dry run.
check profile 0 "$profile" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope --format json -o "$tmp/p.json" --dot "$tmp/g.dot"
py "
import json; rows = json.load(open('$tmp/p.json'))
assert len(rows) > 1 and rows[0]['backend'] in ('SIM0', 'CPU')
assert all(a['backend'] != b['backend'] for a, b in zip(rows, rows[1:])), 'consecutive splits differ in backend'
assert all(r['copy_ms'] is not None for r in rows)" "profile splits"
grep -q "digraph" "$tmp/g.dot" || { echo "FAIL dot"; failures=$((failures + 1)); }
check profile-nodes 0 "$profile" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope --nodes --dry-run --format csv
grep -q "rope.*CPU.*3.best" "$tmp/out" || { echo "FAIL nodes: rope should go to the CPU by pass 3"; cat "$tmp/out"; failures=$((failures + 1)); }
check profile-dry 0 "$profile" -c "$configs/default.json" --dry-run --format json
py "
import json; rows = json.load(open('/dev/stdin'))
assert all(r['compute_ms'] is None for r in rows)" "dry run has no timings" < "$tmp/out"

if [ "$failures" -ne 0 ]; then echo "$failures checks failed"; exit 1; fi
echo "graph-run, sched-profile: all checks passed"
