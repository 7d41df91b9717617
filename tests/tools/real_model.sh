#!/usr/bin/env bash
# The tools on a real model from outside the repository (Gemma 3 270M Q4_K_M as published, installed
# by scripts/models into a cache, never committed): F64's logits against an independent float64
# evaluation (scripts/real_model_reference.py, numpy from the published definition), backend-compare
# with F64 as the reference and as --truth, a fault caught and named, and --kld. Without the file the
# check says so and exits 77, which CTest reports as skipped (never as passed).
# Usage: real_model.sh BACKEND_COMPARE GRAPH_RUN SOURCE_DIR
set -u
compare=$1
graph_run=$2
source_dir=$3
source "$(dirname "$0")/check_lib.sh"

if ! model=$("$source_dir/scripts/models" --where 2>"$tmp/where"); then
  echo "skipped: $(cat "$tmp/where")"
  exit 77
fi
env_python=$("$source_dir/scripts/python-env") || { echo "FAIL: no Python environment (scripts/python-env)"; exit 1; }
tokens=2,818,5279,529,7001,563,9079,236761,1030,2117,4055,1047

# F64 computes the exact answer: its logits are the independent float64 evaluation's, to the f32
# rounding of reading them back.
"$env_python" "$source_dir/scripts/real_model_reference.py" --model "$model" --tokens "$tokens" --out "$tmp/exact.npy" \
  >"$tmp/ref.log" 2>&1 || { echo "FAIL: real_model_reference.py"; cat "$tmp/ref.log"; exit 1; }
check f64-logits 0 "$graph_run" -c "$model" -b F64,CPU --tokens "$tokens" --outputs all -r 1 --warmup 0 --save-outputs "$tmp/f64"
check cpu-logits 0 "$graph_run" -c "$model" -b CPU --tokens "$tokens" --outputs all -r 1 --warmup 0 --save-outputs "$tmp/cpu"
# The model column names the file's type as llama-bench does (general.file_type 15), not the type
# with the most bytes (its q8_0 embedding), and counts the weights only.
expect_in model-column "$tmp/out" "gemma-3-270m-q4_k_m 268M Q4_K - Medium"
"$env_python" "$source_dir/scripts/logit_accuracy.py" "$tmp/exact.npy" "$tmp/f64/result_output.npy" "$tmp/cpu/result_output.npy" \
  --json >"$tmp/acc.json" || { echo "FAIL: logit_accuracy.py"; failures=$((failures + 1)); }
py "
import json; r = json.load(open('$tmp/acc.json'))
f64, cpu = r['candidates']
assert f64['nmse'] <= 1e-12, f64
assert cpu['nmse'] > 1e-6, cpu   # the CPU rounds (8-bit activations): the check can tell them apart
print('F64 nmse %.3g, CPU nmse %.3g against the independent float64 evaluation' % (f64['nmse'], cpu['nmse']))" f64-matches-numpy

# backend-compare: F64 as the reference passes a correct CPU and SIM0, and catches a fault on SIM0.
check compare-f64-cpu 0 "$compare" -c "$model" -b F64,CPU --tokens "$tokens" --format json -o "$tmp/fc.json"
expect_in compare-f64-cpu-summary "$tmp/err" "against F64"
py "
import json; r = json.load(open('$tmp/fc.json'))
assert r['introduced'] == 0 and r['end_to_end']['ok'], (r['introduced'], r['end_to_end'])
assert len(r['nodes']) > 500" compare-f64-cpu-json
check compare-f64-sim 0 "$compare" -c "$model" -b F64,SIM0 --tokens "$tokens"
check compare-fault 1 "$compare" -c "$model" -b F64,SIM0 --tokens "$tokens" -P SIM0:fault_node=ffn_out-3
expect_in compare-fault-node "$tmp/err" "first divergent node: #[0-9]* 'ffn_out-3'"
check truth 0 "$compare" -c "$model" -b CPU,SIM0 --truth F64 --tokens "$tokens"
expect_in truth-output "$tmp/err" "output 'result_output': reference nmse"
check truth-fault 1 "$compare" -c "$model" -b CPU,SIM0 --truth F64 --tokens "$tokens" -P SIM0:fault_node=ffn_out-3
expect_in truth-fault-node "$tmp/err" "'ffn_out-3'"

# --kld: the CPU's next-token distributions against exact ones, the same figures as
# logit_accuracy.py computes from the CPU's logits and the numpy evaluation's (a second
# implementation of the statistics, and a second exact side).
check kld 0 "$compare" -c "$model" -b F64,CPU --tokens "$tokens" --kld --format json -o "$tmp/kld.json"
"$env_python" "$source_dir/scripts/logit_accuracy.py" "$tmp/exact.npy" "$tmp/cpu/result_output.npy" --tokens "$tokens" \
  --json >"$tmp/acc-kld.json" || { echo "FAIL: logit_accuracy.py --tokens"; failures=$((failures + 1)); }
py "
import json; r = json.load(open('$tmp/kld.json')); c = json.load(open('$tmp/acc-kld.json'))['candidates'][0]
assert r['positions'] == 11 and 0 < r['kld']['mean']['value'] < 0.05, r['kld']
assert abs(r['kld']['mean']['value'] - c['kld_mean']) <= 1e-6 * c['kld_mean'], (r['kld']['mean'], c['kld_mean'])
assert abs(r['ppl_ratio']['value'] - c['ppl_ratio']) <= 1e-6, (r['ppl_ratio'], c['ppl_ratio'])" kld-json

finish "real model ($(basename "$model"))"
