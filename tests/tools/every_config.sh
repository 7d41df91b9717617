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
  # A config placed on several backends is checked as placed, node by node, against the CPU alone.
  case "$name" in *offload* | *split*)
    check "$name-placed" 0 "$compare" -c "$config" "${map[@]}" --placed --format json -o "$tmp/pl.json"
    py "
import json; r = json.load(open('$tmp/pl.json'))
assert r['compared'] > 20 and r['failed'] == 0, r['compared']" "$name-placed-report"
  esac
done

# The row split of the split config, and a fault on its second device: --placed finds the node.
split="$configs/llama-decoder-split.json"
"$python" -c "
import json; c = json.load(open('$split')); c['placement']['split']['mode'] = 'row'
json.dump(c, open('$tmp/rows.json', 'w'))"
split_map=(--map CUDA0=SIM0 --map CUDA1=SIM1)
check rows-placed 0 "$compare" -c "$tmp/rows.json" "${split_map[@]}" --placed
check layer-placed-fault 1 "$compare" -c "$split" "${split_map[@]}" --placed -P SIM1:fault_node=ffn_out-3 --format json -o "$tmp/f.json"
py "
import json; r = json.load(open('$tmp/f.json'))
assert r['first_divergent_node']['name'] == 'ffn_out-3' and r['introduced'] == 1, (r['first_divergent_node'], r['introduced'])" "layer-placed-fault-report"
# The same fault by its index in the whole graph (node 95): perturbed wherever the scheduler puts it,
# in backend-compare --placed and in graph-run alike; a node that runs elsewhere is refused.
check layer-placed-fault-index 1 "$compare" -c "$split" "${split_map[@]}" --placed -P SIM1:fault_node=95 --format json -o "$tmp/fi.json"
py "
import json; r = json.load(open('$tmp/fi.json')); f = r['first_divergent_node']
assert f['index'] == 95 and f['name'] == 'ffn_out-3' and r['introduced'] == 1, f
assert [n['device'] for n in r['nodes'] if n['index'] == 95] == ['SIM1']
assert r['end_to_end']['growth_node']['index'] == 95, r['end_to_end']" "layer-placed-fault-index-report"
check placed-fault-elsewhere 2 "$compare" -c "$split" "${split_map[@]}" --placed -P SIM1:fault_node=0
expect_in placed-fault-elsewhere-msg "$tmp/err" "runs on CPU in this placement, so SIM1's fault injected nothing"
check run-clean 0 "$run" -c "$split" "${split_map[@]}" --warmup 0 -r 1 --save-outputs "$tmp/clean" -o /dev/null
check run-fault 0 "$run" -c "$split" "${split_map[@]}" --warmup 0 -r 1 -P SIM1:fault_node=95 --save-outputs "$tmp/fault" -o /dev/null
py "
import os
names = sorted(os.listdir('$tmp/clean'))
assert names and names == sorted(os.listdir('$tmp/fault')), names
assert any(open('$tmp/clean/' + n, 'rb').read() != open('$tmp/fault/' + n, 'rb').read() for n in names)" "run-fault-changes-outputs"
check placed-two-devices 2 "$compare" -c "$split" "${split_map[@]}" --placed -b CPU,SIM0
expect_in placed-two-devices-msg "$tmp/err" "--placed runs one backend"
finish "every config"
