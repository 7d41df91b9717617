#!/usr/bin/env bash
# Every example config through the tools as a user runs them: backend-compare (CPU against SIM0)
# passes, graph-run computes it, and sched-profile's dry run agrees with graph-run on the splits.
# CUDA0 and CUDA1 in a config are mapped onto SIM0 and SIM1 when there are no such GPUs.
# Usage: every_config.sh BACKEND_COMPARE GRAPH_RUN SCHED_PROFILE CONFIG_DIR
set -u
compare=$1
run=$2
profile=$3
configs=$4
source "$(dirname "$0")/check_lib.sh"

map=()
"$compare" --list-devices | grep -q "^CUDA0" || map=(--map CUDA0=SIM0)
"$compare" --list-devices | grep -q "^CUDA1" || map+=(--map CUDA1=SIM1)
for config in "$configs"/*.json; do
  [ "$(basename "$config")" = schema.json ] && continue
  name=$(basename "$config" .json)
  check "$name-compare" 0 "$compare" -c "$config" -b CPU,SIM0 "${map[@]}" --format json -o "$tmp/c.json"
  py "
import json; r = json.load(open('$tmp/c.json'))
assert r['compared'] > 0 and r['passed'] == r['compared'] and r['first_divergent'] is None" "$name-compare-report"
  check "$name-run" 0 "$run" -c "$config" "${map[@]}" --warmup 0 -r 1 --format json -o "$tmp/r.json"
  check "$name-profile" 0 "$profile" -c "$config" "${map[@]}" --dry-run --format json -o "$tmp/p.json"
  py "
import json; r = json.load(open('$tmp/r.json'))['runs'][0]; p = json.load(open('$tmp/p.json'))
assert r['n_nodes'] == p['n_nodes'] > 0 and r['n_splits'] == p['n_splits'] == len(p['splits'])
assert r['buffer_bytes'] == p['buffer_bytes']" "$name-run-agrees-with-profile"
done
finish "every config"
