#!/usr/bin/env bash
# End-to-end checks of the exact reference device (F64) and of what backend-compare builds on it, as
# a user runs them: F64 as the reference, --truth F64 beside a pair, faults caught either way, the
# KL-divergence statistics of a model file's logits over a token sequence, and one clear line (exit
# 2) for each mistake: a truth that is a side, a token outside the vocabulary, a bad token file, a
# graph F64 has no memory for. Usage: exact_device.sh BACKEND_COMPARE CONFIG_DIR MODEL_DIR
set -u
bin=$1
configs=$2
models=$3
source "$(dirname "$0")/check_lib.sh"

# F64 as the reference: a correct CPU passes, against an end-to-end tolerance from the estimate.
check f64-cpu 0 "$bin" -c "$configs/default.json" -b F64,CPU
expect_in f64-cpu-summary "$tmp/err" "CPU (.*) against F64"
expect_in f64-cpu-basis "$tmp/err" "a correct f32 computation makes"
check f64-sim 0 "$bin" -c "$configs/default.json" -b F64,SIM0
# A fault on the simulated device is caught against F64, and named.
check f64-fault 1 "$bin" -c "$configs/default.json" -b F64,SIM0 -P SIM0:fault_node=11
expect_in f64-fault-node "$tmp/err" "first divergent node: #11"

# --truth: each node's error against exact on both sides, and which side is closer.
check truth 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 --truth F64 --format json -o "$tmp/truth.json"
expect_in truth-summary "$tmp/err" "both against F64"
py "
import json; r = json.load(open('$tmp/truth.json'))
assert r['truth'] == 'F64' and r['backends'] == ['CPU', 'SIM0']
nodes = [n for n in r['nodes'] if 'nmse' in n]
assert nodes and all('truth' in n for n in nodes)
assert all(n['truth']['closer'] in ('target', 'reference', 'equal') for n in nodes)
assert any(n['truth']['reference_nmse'] > 0 for n in nodes)
assert r['end_to_end']['basis'].startswith(\"the reference's measured error against F64\")" truth-json
check truth-table 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 --truth F64
expect_in truth-columns "$tmp/out" "reference vs F64"
check truth-fault 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 --truth F64 -P SIM0:fault_node=11 --format json -o "$tmp/tf.json"
expect_in truth-fault-node "$tmp/err" "first divergent node: #11"
py "
import json; r = json.load(open('$tmp/tf.json'))
n = [n for n in r['nodes'] if n['index'] == 11][0]
assert n['truth']['closer'] == 'reference' and n['truth']['target_nmse'] > 100 * n['truth']['reference_nmse'], n" truth-fault-closer
check truth-is-a-side 2 "$bin" -c "$configs/default.json" -b F64,SIM0 --truth F64
expect_in truth-is-a-side-message "$tmp/err" "is already a side of the comparison"
check truth-placed 2 "$bin" -c "$configs/default.json" --placed --truth F64
expect_in truth-placed-message "$tmp/err" "not --placed"

# --kld on a model file's logits over a token sequence, in every format.
tokens=1,17,255,42,3,200,99
check kld 0 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --tokens "$tokens" --kld
expect_in kld-table "$tmp/out" "Mean KLD"
expect_in kld-table-dp "$tmp/out" "RMS Δp %"
expect_in kld-summary "$tmp/err" "over 6 positions: mean KLD"
check kld-json 0 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --tokens "$tokens" --kld --format json -o "$tmp/kld.json"
py "
import json; r = json.load(open('$tmp/kld.json'))
assert r['base'] == 'F64' and r['target'] == 'CPU' and r['positions'] == 6, r
assert 0 < r['kld']['mean']['value'] < 0.01 and r['same_top']['value'] == 1.0, r
assert set(r['kld']['percentiles']) == {'99.9', '99.0', '95.0', '90.0', '50.0', '10.0', '5.0', '1.0', '0.1'}" kld-json-fields
echo "[1, 17, 255, 42, 3, 200, 99]" > "$tmp/tokens.json"
check kld-file 0 "$bin" -c "$models/tiny-llama-quant.gguf" -b CPU,SIM0 --tokens "$tmp/tokens.json" --kld --format csv
expect_in kld-csv "$tmp/out" "Same top p %"
# A wrong backend shows: its logits diverge.
check kld-fault 0 "$bin" -c "$models/tiny-llama-quant.gguf" -b CPU,SIM0 --tokens "$tokens" --kld --format json -o "$tmp/kf.json" \
  -P SIM0:fault_node=result_norm
py "
import json; r = json.load(open('$tmp/kf.json')); assert r['kld']['mean']['value'] > 0.01, r['kld']" kld-fault-diverges

# Mistakes: one line each, exit 2.
check kld-no-tokens 2 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --kld
expect_in kld-no-tokens-message "$tmp/err" "give the tokens"
check token-outside 2 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --tokens 1,5,999 --kld
expect_in token-outside-message "$tmp/err" "token id 999 is outside the vocabulary"
: > "$tmp/empty.txt"
check token-empty 2 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --tokens "$tmp/empty.txt" --kld
expect_in token-empty-message "$tmp/err" "the token file is empty"
printf '1\n17\nabc\n' > "$tmp/words.txt"
check token-words 2 "$bin" -c "$models/tiny-llama-quant.gguf" -b F64,CPU --tokens "$tmp/words.txt"
expect_in token-words-message "$tmp/err" "line 3: 'abc' is not a token id"
check tokens-for-a-builder 2 "$bin" -c "$configs/default.json" -b F64,CPU --tokens 1,2,3
expect_in tokens-for-a-builder-message "$tmp/err" "gives a llama.cpp model file (gguf) its batch"
# A weight of 4 TiB: more than F64 (half the host's memory) can hold.
cat > "$tmp/huge.json" <<'JSON'
{ "tensors": { "w": { "shape": [1048576, 1048576], "type": "f32", "role": "weight" },
               "x": { "shape": [1048576], "type": "f32", "role": "input" } },
  "graph": [ { "name": "y", "op": "mul_mat", "args": ["w", "x"] } ] }
JSON
check f64-memory 2 "$bin" -c "$tmp/huge.json" -b F64,CPU
expect_in f64-memory-message "$tmp/err" "F64"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || { echo "FAIL f64-memory: not one line"; cat "$tmp/err"; failures=$((failures + 1)); }
for f in out err; do if grep -qi "abort\|terminate\|sanitizer" "$tmp/$f"; then echo "FAIL: a crash in $f"; failures=$((failures + 1)); fi; done

finish "exact device and --kld"
