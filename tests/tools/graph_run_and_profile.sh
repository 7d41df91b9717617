#!/usr/bin/env bash
# End-to-end checks of graph-run and sched-profile as a user runs them.
# Usage: graph_run_and_profile.sh GRAPH_RUN SCHED_PROFILE CONFIG_DIR
set -u
run=$1
profile=$2
configs=$3
source "$(dirname "$0")/check_lib.sh"

# cuBLAS is opened when a CUDA backend starts, not at program start (lib/cuda/cublas_library.hpp):
# a run on the CPU alone never loads it. The loader's own log says which libraries it loaded.
LD_DEBUG=libs "$run" -c "$configs/default.json" -b CPU -r 1 >/dev/null 2>"$tmp/loader.txt"
if ! grep -q "calling init" "$tmp/loader.txt"; then
  echo "FAIL cpu-run-loads-no-cublas: the loader's log (LD_DEBUG=libs) is empty"; failures=$((failures + 1))
elif grep -q "libcublas" "$tmp/loader.txt"; then
  echo "FAIL cpu-run-loads-no-cublas: $(grep -m1 libcublas "$tmp/loader.txt")"; failures=$((failures + 1))
fi

# graph-run: JSON report fields, trace, saved outputs.
check run-json 0 "$run" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope -r 3 -t 2 --format json \
  -o "$tmp/run.json" --trace "$tmp/trace.json" --save-outputs "$tmp/outs"
py "
import json; d = json.load(open('$tmp/run.json')); assert len(d['runs']) == 1; r = d['runs'][0]
for k in ('config', 'backends', 'n_nodes', 'n_splits', 'time_ms', 'buffer_bytes', 'copy_bytes'): assert k in r, k
assert r['reps'] == 3 and r['n_splits'] > 1 and r['copy_bytes'] > 0
t = r['time_ms']; assert 0 < t['min'] <= t['median'] <= t['max']
assert set(r['buffer_bytes']) == {'SIM0', 'CPU'} and r['threads'] == 2
m = d['meta']
assert m['tool'] == 'graph-run' and m['backends'] == ['SIM0', 'CPU'] and m['commit'] and m['cpu_kernels'], m
assert m['cpu_device'].startswith(m['cpu']) and m['cpu_kernels'] + ' kernels' in m['cpu_device'], m['cpu_device']
assert ', one-token products by ' in m['cpu_device'], m['cpu_device']" "run-json fields"
py "
import json; e = json.load(open('$tmp/trace.json'))['traceEvents']
spans = [x for x in e if x['ph'] == 'X']; assert len(spans) >= 3 and all(x['dur'] >= 0 for x in spans)
# Names repeat across computes (Perfetto groups them); the repetition and the split are args.
assert all('rep' not in x['name'] and x['args']['rep'] in range(3) and 'nodes' in x['args'] for x in spans), spans[:3]
assert len({x['name'] for x in spans}) * 3 == len(spans), 'the same span names in every rep'
copies = [x for x in spans if x['name'].endswith(' copy') and x['args']['n_inputs'] > 0]
assert copies and all(x['args']['bytes'] > 0 and len(x['args']['inputs']) == x['args']['n_inputs'] for x in copies)
assert {x['args']['name'] for x in e if x['ph'] == 'M'} == {'SIM0', 'CPU'}" "trace"
[ -s "$tmp/outs/result_output.npy" ] || { echo "FAIL save-outputs: no result_output.npy"; failures=$((failures + 1)); }
# Two saved runs compared: every shared number with new/base, and the ways the runs differ.
check run-json-1t 0 "$run" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope -r 2 -t 1 --format json -o "$tmp/run1.json"
check compare 0 "$run" --compare "$tmp/run.json" "$tmp/run1.json" --format json -o "$tmp/cmp.json"
expect_in compare-threads "$tmp/err" "runs differ in threads: 2 -> 1"
py "
import json; c = json.load(open('$tmp/cmp.json')); m = {x['metric']: x for x in c['metrics']}
assert m['n_splits']['ratio'] == 1 and m['n_splits']['base'] == m['n_splits']['new']
t = m['time_ms.median']; assert abs(t['ratio'] - t['new'] / t['base']) < 1e-12
assert 'buffer_bytes.SIM0' in m and 'meta' not in ' '.join(m), m.keys()
assert c['meta']['tool'] == 'graph-run'" "compare metrics"
# A report of the older shape (one run at the top level) still compares.
py "
import json; d = json.load(open('$tmp/run.json')); old = dict(d['runs'][0], meta=d['meta'])
json.dump(old, open('$tmp/old.json', 'w'))" "old report"
check compare-old 0 "$run" --compare "$tmp/old.json" "$tmp/run1.json" --format csv
expect_in compare-old-columns "$tmp/out" "run,base_tokens_per_s,new_tokens_per_s,new/base,base_median_ms,new_median_ms"
# llama-bench's tests: -p prompts, -n tokens generated one after another (a repetition times all
# of them), -d depths (one run each, a test column and llama-bench's n_prompt, n_gen, n_depth),
# --ngl layers on the GPU; SQL output for sqlite3; --compare one row per paired run.
check tests-json 0 "$run" -c "$configs/llama-decoder.json" -p 4,8 -n 3 -d 0,16 -r 1 --format json -o "$tmp/tests.json"
py "
import json; runs = json.load(open('$tmp/tests.json'))['runs']
assert [r['test'] for r in runs] == ['pp4', 'pp4@d16', 'pp8', 'pp8@d16', 'tg3', 'tg3@d16'], [r['test'] for r in runs]
assert [(r['n_prompt'], r['n_gen'], r['n_depth']) for r in runs] == [(4, 0, 0), (4, 0, 16), (8, 0, 0), (8, 0, 16), (0, 3, 0), (0, 3, 16)]
assert [r['n_tokens'] for r in runs] == [4, 4, 8, 8, 3, 3]
assert all(r['model'].startswith('llama-decoder ') and r['model'].endswith(' f32') for r in runs), runs[0]['model']
assert all(abs(r['tokens_per_s'] - r['n_tokens'] / (r['time_ms']['median'] * 1e-3)) < 1e-6 * r['tokens_per_s'] for r in runs)" "tests json"
check tests-default 0 "$run" -c "$configs/llama-decoder.json" -r 1 --format csv
expect_in tests-default-test "$tmp/out" ",pp"
check tests-sql 0 "$run" -c "$configs/llama-decoder.json" -p 4 -r 1 --format sql
expect_in tests-sql-create "$tmp/out" "CREATE TABLE IF NOT EXISTS graph_run ("
expect_in tests-sql-insert "$tmp/out" "INSERT INTO graph_run (config, model, test, n_prompt, n_gen, n_depth, backends,"
if command -v sqlite3 >/dev/null 2>&1; then
  sqlite3 "$tmp/runs.db" <"$tmp/out" && [ "$(sqlite3 "$tmp/runs.db" 'select test from graph_run')" = pp4 ] ||
    { echo "FAIL tests-sql-sqlite3"; failures=$((failures + 1)); }
fi
check tests-no-tokens 2 "$run" -c "$configs/mlp.json" -p 8 -r 1
expect_in tests-no-tokens-msg "$tmp/err" "-p and -n set the tokens of a model"
check tests-ngl 0 "$run" -c "$configs/llama-decoder-offload.json" --map CUDA0=SIM0 --ngl 2 -r 1 --format json -o "$tmp/ngl.json"
check tests-ngl0 0 "$run" -c "$configs/llama-decoder-offload.json" --map CUDA0=SIM0 --ngl 0 -r 1 --format json -o "$tmp/ngl0.json"
py "
import json; a = json.load(open('$tmp/ngl.json'))['runs'][0]; b = json.load(open('$tmp/ngl0.json'))['runs'][0]
assert a['n_splits'] > b['n_splits'], (a['n_splits'], b['n_splits'])" "ngl offloads"
# --override-tensor REGEX=DEVICE (llama-bench's -ot): the experts of a MoE file stay on the host while
# its layers are offloaded, so the run splits where the experts' products go to the CPU; a bad value
# is one line and exit 2.
moe=$configs/../tests/data/models/arch/tiny-qwen3moe.gguf
check tests-ot 0 "$run" -c "$moe" -b SIM0,CPU --ngl 99 --ot exps=CPU -r 1 -p 7 --format json -o "$tmp/ot.json"
check tests-ot-none 0 "$run" -c "$moe" -b SIM0,CPU --ngl 99 -r 1 -p 7 --format json -o "$tmp/ot0.json"
py "
import json; a = json.load(open('$tmp/ot.json'))['runs'][0]; b = json.load(open('$tmp/ot0.json'))['runs'][0]
assert a['n_splits'] > b['n_splits'], (a['n_splits'], b['n_splits'])" "override-tensor keeps experts on the host"
check tests-ot-bad 2 "$run" -c "$moe" --ot 'exps(=CPU' -r 1
expect_in tests-ot-bad-line "$tmp/err" "graph-run: --override-tensor 'exps(=CPU': 'exps(' is not a regular expression"
check tests-ot-none-match 2 "$run" -c "$moe" --ot 'ffn_zz=CPU' -r 1
expect_in tests-ot-none-line "$tmp/err" "--override-tensor ffn_zz=CPU: pattern 'ffn_zz' matches no weight"
check tests-compare 0 "$run" --compare "$tmp/tests.json" "$tmp/tests.json" --format json -o "$tmp/tcmp.json"
py "
import json; c = json.load(open('$tmp/tcmp.json'))
assert c['differences'] == [] and c['unpaired'] == [], c
assert len({m['run'] for m in c['metrics']}) == 6" "compare pairs by test"
# Reports with no run in common: said in one line, exit 2 (not an empty table).
check tests-compare-nothing-pairs 2 "$run" --compare "$tmp/tests.json" "$tmp/run.json"
expect_in tests-compare-nothing-pairs-msg "$tmp/err" "pairs with one of"
# Runs of the same matrix that differ in their threads alone (graph-run lowers them on a busy
# machine) still pair, the difference said; runs left without a partner are named.
check tests-json-t1 0 "$run" -c "$configs/llama-decoder.json" -p 4,8 -r 1 -t 1 --format json -o "$tmp/t1.json"
check tests-json-t2 0 "$run" -c "$configs/llama-decoder.json" -p 4,8 -r 1 -t 2 --format json -o "$tmp/t2.json"
check compare-threads 0 "$run" --compare "$tmp/t1.json" "$tmp/t2.json" --format json -o "$tmp/thcmp.json"
py "
import json; c = json.load(open('$tmp/thcmp.json'))
assert c['unpaired'] == [] and len({m['run'] for m in c['metrics']}) == 2, c
assert sum(d.startswith('threads of ') and d.endswith(': 1 -> 2') for d in c['differences']) == 2, c['differences']" "compare pairs across threads"
check compare-threads-partly 0 "$run" --compare "$tmp/t1.json" "$tmp/tests.json"
expect_in compare-threads-partly-unpaired "$tmp/err" "no partner for the run of new: "
check compare-not-a-report 2 "$run" --compare "$tmp/run.json" "$tmp/trace.json"
expect_in compare-not-a-report-msg "$tmp/err" "is not a graph-run JSON report"
check compare-missing 2 "$run" --compare "$tmp/run.json" "$tmp/none.json"
check compare-one-file 2 "$run" --compare "$tmp/run.json"
# --save-weights: the weights as a GGUF file that --info reads and a config loads back, giving the
# same outputs as the run that saved them.
check save-weights 0 "$run" -c "$configs/default.json" --seed 7 -r 1 --save-weights "$tmp/w.gguf" --save-outputs "$tmp/o7"
check save-weights-info 0 "$run" -c "$tmp/w.gguf" --info
expect_in save-weights-arch "$tmp/out" "xbackend"
"$python" -c "
import json; c = json.load(open('$configs/default.json'))
c['defaults'] = {'init': {'kind': 'gguf', 'file': '$tmp/w.gguf'}}
json.dump(c, open('$tmp/from_weights.json', 'w'))"
check load-weights 0 "$run" -c "$tmp/from_weights.json" --seed 7 -r 1 --save-outputs "$tmp/ow"
cmp -s "$tmp/o7/result_output.npy" "$tmp/ow/result_output.npy" ||
  { echo "FAIL load-weights: outputs differ from the run that saved the weights"; failures=$((failures + 1)); }
check save-weights-bad-path 2 "$run" -c "$configs/default.json" -r 1 --save-weights "$tmp/no/such/dir/w.gguf"
check run-bad-config 2 "$run" -c "$tmp/missing.json"
check run-bad-device 2 "$run" -c "$configs/default.json" -b CUDA3,CPU
# The CPU left out of -b: the message says what to write.
check run-no-cpu 2 "$run" -c "$configs/default.json" -b SIM0
expect_in run-no-cpu-msg "$tmp/err" "e.g. SIM0,CPU"
# Without -c, the default config is found from any directory (the repository's, next to the build).
check run-default-elsewhere 0 env -C "$tmp" "$run" -r 1

# Lists run every (config, backends, threads), in that order, one row each, in every format.
matrix=(-c "$configs/default.json,$configs/mlp.json" -b SIM0,CPU -b CPU -t 1,2 -r 1 --warmup 0)
check matrix-json 0 "$run" "${matrix[@]}" --format json -o "$tmp/m.json"
py "
import json; runs = json.load(open('$tmp/m.json'))['runs']
got = [(r['config'].split('/')[-1], ','.join(r['backends']), r['threads']) for r in runs]
want = [(c, b, t) for c in ('default.json', 'mlp.json') for b in ('SIM0,CPU', 'CPU') for t in (1, 2)]
assert got == want, got
assert all(r['reps'] == 1 and r['time_ms']['median'] > 0 and r['others_running'] >= 0 for r in runs)" "matrix runs"
check matrix-csv 0 "$run" "${matrix[@]}" --format csv
py "
import csv; rows = list(csv.DictReader(open('$tmp/out')))
assert len(rows) == 8 and [r['threads'] for r in rows] == ['1', '2'] * 4 and rows[2]['backends'] == 'CPU', rows" "matrix csv"
check matrix-md 0 "$run" "${matrix[@]}" --format md
[ "$(grep -c '^| .*mlp.json' "$tmp/out")" = 4 ] || { echo "FAIL matrix-md: 4 mlp rows expected"; cat "$tmp/out"; failures=$((failures + 1)); }
check matrix-jsonl 0 "$run" "${matrix[@]}" --format jsonl
py "
import json; lines = open('$tmp/out').read().splitlines()
rows = [json.loads(l) for l in lines]
assert len(rows) == 8 and all(r['meta']['tool'] == 'graph-run' and 'time_ms' in r for r in rows)
assert [r['meta']['threads'] for r in rows] == [1, 2] * 4" "matrix jsonl"
# Lists compare run by run; a run only one side has is named.
check matrix-less 0 "$run" -c "$configs/default.json" -b SIM0,CPU -b CPU -t 1 -r 1 --warmup 0 --format json -o "$tmp/m1.json"
check compare-matrix 0 "$run" --compare "$tmp/m1.json" "$tmp/m.json" --format json -o "$tmp/cm.json"
py "
import json; c = json.load(open('$tmp/cm.json'))
paired = {m['run'] for m in c['metrics']}
assert len(paired) == 2 and all(r.endswith(' t1') for r in paired), paired
assert sum(u.startswith('new: ') for u in c['unpaired']) == 6 and c['differences'] == [], c" "compare matrix"
check matrix-save-outputs 2 "$run" "${matrix[@]}" --save-outputs "$tmp/mo"
expect_in matrix-save-outputs-msg "$tmp/err" "take one run"
check matrix-bad-config 2 "$run" -c "$configs/default.json,$tmp/missing.json" -r 1
expect_in matrix-bad-config-names-run "$tmp/err" "missing.json"

# --profile: every computing node timed; per op and slowest nodes in md, all nodes in JSON, node spans in the trace.
check profile-json 0 "$run" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope -r 2 --profile --format json \
  -o "$tmp/prof.json" --trace "$tmp/prof-trace.json"
py "
import json; r = json.load(open('$tmp/prof.json'))['runs'][0]; p = r['profile']
nodes = p['nodes']; assert p['reps'] == 2 and len(nodes) > 20 and len(nodes) <= r['n_nodes']
assert all(n['us'] > 0 and n['backend'] in ('SIM0', 'CPU') for n in nodes)
assert len({n['name'] for n in nodes}) == len(nodes), 'node names are unique'
assert all(n['backend'] == 'CPU' for n in nodes if n['op'] == 'rope') and any(n['backend'] == 'SIM0' for n in nodes)
assert abs(sum(n['us'] for n in nodes) - p['sum_us']) < 1e-6 * p['sum_us']
assert abs(sum(o['total_ms'] for o in p['ops']) * 1e3 - p['sum_us']) < 1e-6 * p['sum_us']
assert sum(o['nodes'] for o in p['ops']) == len(nodes) and 'mul_mat' in {o['op'] for o in p['ops']}
e = json.load(open('$tmp/prof-trace.json'))['traceEvents']
spans = [x for x in e if x['ph'] == 'X' and 'op' in x['args']]
assert {x['name'] for x in spans} == {n['name'] for n in nodes}, 'one trace span per profiled node'
assert all(x['args']['bytes'] > 0 and x['args']['type'] == 'f32' and x['args']['backend'] in ('SIM0', 'CPU') for x in spans)" "profile"
check profile-md 0 "$run" -c "$configs/default.json" -r 1 --profile --format md
expect_in profile-md-ops "$tmp/out" "#### Time per op"
expect_in profile-md-slowest "$tmp/out" "#### Slowest nodes"
# Which nodes are slowest depends on the machine's load (a preempted product can take ten times
# its time): any product among them will do.
expect_in profile-md-slowest-row "$tmp/out" "| mul_mat | CPU |"

# A machine busier than the threads allow gets a warning (one busy loop per CPU).
cpus=$(nproc)
busy=()
for _ in $(seq "$cpus"); do (while :; do :; done) & busy+=($!); done
check busy 0 "$run" -c "$configs/default.json" -t 1 -r 1 --warmup 0
cp "$tmp/err" "$tmp/busy-asked.err"
# Without -t the threads are capped by the CPUs not already busy: one here.
check busy-default 0 env -u OMP_NUM_THREADS "$run" -c "$configs/default.json" -r 1 --warmup 0 --format json
kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null
expect_in busy-warning "$tmp/busy-asked.err" "warning: .* running on this machine's $cpus CPUs: timings with 1 thread will contend"
expect_in busy-default-warning "$tmp/err" "warning: .* running on this machine"
py "
import json; r = json.load(open('$tmp/out'))['runs'][0]
assert r['threads'] == 1 and r['others_running'] >= $cpus, r" "busy default threads"

# sched-profile: the split table agrees with the devices and its totals, and with graph-run's
# report of the same run; node reasons, DOT, dry run, sweep, the copy-bound hint.
check profile 0 "$profile" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope --format json -o "$tmp/p.json" --dot "$tmp/g.dot" --dot-level node
py "
import json; p = json.load(open('$tmp/p.json')); rows = p['splits']
r = p
m = r['meta']
assert m['tool'] == 'sched-profile' and m['commit'] and m['build_type'] and m['cpu_kernels'] in ('scalar', 'avx2', 'avx512'), m
assert m['date'].endswith('Z') and isinstance(m['n_cpus'], int) and isinstance(m['gpus'], list), m
assert len(rows) > 1 and rows[0]['backend'] in ('SIM0', 'CPU')
assert p['n_splits'] == len(rows), 'n_splits is the number of split rows'
assert all(a['backend'] != b['backend'] for a, b in zip(rows, rows[1:])), 'consecutive splits differ in backend'
assert all(r['copy_ms'] is not None for r in rows)
assert p['copy_bytes'] == sum(r['copied_bytes'] for r in rows) > 0, 'copy bytes are the sum of the copied split inputs'
assert p['copy_bytes'] == sum(c['bytes'] for c in p['copies_by_pair'].values())
assert p['n_copies'] == sum(c['copies'] for c in p['copies_by_pair'].values())
# Each split that copies names what it copied, with sizes for people.
assert all(('iB)' in r['copied'] or ' B)' in r['copied']) == (r['copied_bytes'] > 0) for r in rows), rows
r = json.load(open('$tmp/run.json'))['runs'][0]
assert (r['n_splits'], r['copy_bytes'], r['buffer_bytes']) == (p['n_splits'], p['copy_bytes'], p['buffer_bytes']), 'graph-run agrees'
" "profile splits"
# rope runs on the CPU, the rest on SIM0: copies between them are declared, dashed and bold.
grep -q "digraph" "$tmp/g.dot" && grep -q 'c[0-9]* \[label="CPU#.*dashed' "$tmp/g.dot" && grep -q "penwidth=3" "$tmp/g.dot" ||
  { echo "FAIL dot"; cat "$tmp/g.dot"; failures=$((failures + 1)); }
# A 32-layer model half offloaded: the split level (the default) is a box per split, the layer
# level a box per layer; both render to a picture of readable size.
"$python" -c "
import json; c = json.load(open('$configs/llama-decoder-offload.json'))
c['graph']['params'].update(n_layers=32, n_embd=64, n_head=4, n_ff=128, n_vocab=256, n_tokens=4)
c['placement']['offload_layers'] = 16
json.dump(c, open('$tmp/deep.json', 'w'))"
check dot-split 0 "$profile" -c "$tmp/deep.json" --map CUDA0=SIM0 --dry-run --dot "$tmp/deep.dot" --format json -o "$tmp/deep.json.out"
check dot-layer 0 "$profile" -c "$tmp/deep.json" --map CUDA0=SIM0 --dry-run --dot "$tmp/deep-layers.dot" --dot-level layer
py "
import json, re; p = json.load(open('$tmp/deep.json.out')); d = open('$tmp/deep.dot').read()
boxes = re.findall(r'^  g[0-9]+ \[', d, re.M)
assert len(boxes) == p['n_splits'], (len(boxes), p['n_splits'])
assert 'layers 16-31' in d or 'layers 0-15' in d, d
l = open('$tmp/deep-layers.dot').read()
assert all(f'label=\"layer {i}\\\\n' in l for i in range(32)), l[:2000]
assert len(re.findall(r'^    g[0-9]+ \[', l, re.M)) <= 32 + 2 * p['n_splits']" "dot levels"
if command -v dot >/dev/null 2>&1; then
  for f in deep deep-layers; do
    dot -Tsvg "$tmp/$f.dot" -o "$tmp/$f.svg" || { echo "FAIL dot-render $f"; failures=$((failures + 1)); }
  done
  py "
import re
for f, limit in (('deep', 1500), ('deep-layers', 6000)):
    svg = open('$tmp/' + f + '.svg').read()
    w, h = (float(x) for x in re.search(r'width=\"([0-9.]+)pt\" height=\"([0-9.]+)pt\"', svg).groups())
    assert w < limit and h < limit, (f, w, h)" "dot readable size"
fi
check dot-level-bad 2 "$profile" -c "$configs/default.json" --dry-run --dot "$tmp/x.dot" --dot-level nodes
check profile-nodes 0 "$profile" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope --nodes --dry-run --format csv
grep -q "rope.*CPU.*3.best" "$tmp/out" || { echo "FAIL nodes: rope should go to the CPU by pass 3"; cat "$tmp/out"; failures=$((failures + 1)); }
expect_in profile-nodes-why "$tmp/out" "SIM0 does not support rope"
check profile-summary 0 "$profile" -c "$configs/default.json" -b SIM0,CPU -P SIM0:unsupported=rope -r 1
expect_in profile-summary-units "$tmp/err" " KiB"
check profile-dry 0 "$profile" -c "$configs/default.json" --dry-run --format json
py "
import json; p = json.load(open('/dev/stdin'))
assert p['compute_ms'] is None and all(r['compute_ms'] is None for r in p['splits'])" "dry run has no timings" < "$tmp/out"

offload="$configs/llama-decoder-offload.json"
check sweep 0 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep offload_layers=0..5 --dry-run --format json
py "
import json; s = json.load(open('/dev/stdin')); res = s['results']
assert s['sweep'] == 'offload_layers' and [x['value'] for x in res] == list(range(6))
assert res[0]['n_splits'] == 1 and res[0]['copy_bytes'] == 0, 'nothing offloaded: one CPU split'
assert all(x['n_splits'] > 1 and x['copy_bytes'] > 0 for x in res[1:]), 'offloaded layers split the graph'" "sweep" < "$tmp/out"
# Sweeping n_copies keeps the swept value and the copy count apart.
check sweep-copies 0 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep n_copies=1,2 --dry-run --format json
py "
import json; s = json.load(open('/dev/stdin')); res = s['results']
assert [x['value'] for x in res] == [1, 2] and all(x['n_copies'] >= 0 for x in res)" "sweep n_copies" < "$tmp/out"
check sweep-copies-table 0 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep n_copies=1,2 --dry-run
expect_in sweep-copies-column "$tmp/out" "n_copies (swept)  n_splits  copies"
# Sweeping a split's ratios: each value sets the layers' shares; all on one side needs fewer splits.
split="$configs/llama-decoder-split.json"
check sweep-ratios 0 "$profile" -c "$split" --map CUDA0=SIM0 --map CUDA1=SIM1 --sweep split.ratios=1:1,0:1 -r 1 --format json
py "
import json; s = json.load(open('/dev/stdin')); res = s['results']
assert s['sweep'] == 'split.ratios' and [x['value'] for x in res] == [[1, 1], [0, 1]], res
assert res[0]['n_splits'] == 3 and res[1]['n_splits'] == 2, [x['n_splits'] for x in res]
pairs = res[0]['copies_by_pair']; assert pairs['SIM0->SIM1']['bytes'] > 0 and pairs['SIM0->SIM1']['modelled_ms'] > 0, pairs" "sweep ratios" < "$tmp/out"
check sweep-ratios-count 2 "$profile" -c "$split" --map CUDA0=SIM0 --map CUDA1=SIM1 --sweep split.ratios=1:1:1 --dry-run
expect_in sweep-ratios-count-msg "$tmp/err" "one ratio per device of the split (2)"
check sweep-ratios-no-split 2 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep split.ratios=1:1 --dry-run
expect_in sweep-ratios-no-split-msg "$tmp/err" "has no placement.split"
# A range past the model's layers is refused, with the range that makes sense.
check sweep-too-far 2 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep offload_layers=0..99 --dry-run
expect_in sweep-too-far-msg "$tmp/err" "sweep 0.."
check sweep-bad 2 "$profile" -c "$offload" --map CUDA0=SIM0 --sweep layers=0..2
grep -q "offload_layers" "$tmp/err" || { echo "FAIL sweep-bad: the message should name the known keys"; failures=$((failures + 1)); }
# A link slow enough that copies take most of the time must be called out (the cost is modelled,
# not slept: minutes of modelled copies against seconds of compute, even under a sanitizer on a loaded
# machine).
check copy-bound 0 "$profile" -c "$offload" --map CUDA0=SIM0 -P SIM0:bandwidth_gbps=0.000001 -r 1
grep -q "bound by copies" "$tmp/err" || { echo "FAIL copy-bound hint"; cat "$tmp/err"; failures=$((failures + 1)); }
check not-copy-bound 0 "$profile" -c "$offload" --map CUDA0=SIM0 -r 1
grep -q "bound by copies" "$tmp/err" && { echo "FAIL hint on a compute-bound run"; failures=$((failures + 1)); }

# Pinned host weights: with a simulated device that has a pinned host buffer and takes the CPU's
# batch-32 products (as CUDA does), the weights that stay on the host live in SIM0_Host and every
# copy reports its measured rate beside the link's; --host-weights pageable keeps them in the CPU's
# memory, whose copies the link model takes twice as long over (pageable_ratio 0.5).
pin="SIM0:host_buffer=1,offload_min_batch=32,bandwidth_gbps=8,latency_us=0"
check pinned 0 "$profile" -c "$offload" --map CUDA0=SIM0 -P "$pin" -r 1 --format json -o "$tmp/pinned.json"
expect_in pinned-summary "$tmp/err" "GB/s achieved of a 8 GB/s link"
expect_in pinned-summary-buffers "$tmp/err" "host weights in: SIM0_Host"
check pageable 0 "$profile" -c "$offload" --map CUDA0=SIM0 -P "$pin" --host-weights pageable -r 1 --format json -o "$tmp/pageable.json"
py "
import json; a = json.load(open('$tmp/pinned.json')); b = json.load(open('$tmp/pageable.json'))
assert a['host_weight_buffers'] == ['SIM0_Host'] and b['host_weight_buffers'] == ['CPU'], (a['host_weight_buffers'], b['host_weight_buffers'])
assert a['copy_bytes'] == b['copy_bytes'] > 0 and a['n_splits'] == b['n_splits']
ins = [x for x in a['inputs'] if x['copied']]
assert ins and all(x['host_memory'] == 'pinned' for x in ins), ins[:2]
assert any(x['input'].endswith('.weight') for x in ins), 'the offloaded products copy weights'
assert all(x['host_memory'] == 'pageable' for x in b['inputs'] if x['copied'])
for x in ins:
    assert x['copy_ms'] > 0 and 0 < x['achieved_gbps'] < 1000 and x['link_gbps'] == 8, x
    assert abs(x['achieved_gbps'] - x['bytes'] / x['copy_ms'] * 1e-6) <= 1e-9 * x['achieved_gbps'], x
    assert abs(x['modelled_gbps'] - x['link_gbps']) < 1e-6, x
pa = a['copies_by_pair']['CPU->SIM0']; pb = b['copies_by_pair']['CPU->SIM0']
assert pa['link_gbps'] == 8 and 0 < pa['achieved_gbps'] < 1000 and pa['copy_ms'] > 0, pa
assert abs(pa['modelled_gbps'] - 8) < 1e-6 and abs(pb['modelled_gbps'] - 4) < 1e-6, (pa, pb)
assert abs(a['modelled_copy_ms'] * 2 - b['modelled_copy_ms']) < 1e-6 * b['modelled_copy_ms']
assert all(r['link_gbps'] == 8 and r['achieved_gbps'] > 0 for r in a['splits'] if r['copied_bytes'] > 0)
assert all(r['achieved_gbps'] is None for r in a['splits'] if r['copied_bytes'] == 0)" "pinned host weights"
check pinned-inputs 0 "$profile" -c "$offload" --map CUDA0=SIM0 -P "$pin" -r 1 --inputs --format csv
expect_in pinned-inputs-csv "$tmp/out" "host_memory,copy_ms,achieved_gbps,link_gbps,modelled_ms,modelled_gbps"
expect_in pinned-inputs-row "$tmp/out" "blk.0.ffn_up.weight,CPU,SIM0,11534336,yes,pinned,"
check pinned-dry 0 "$profile" -c "$offload" --map CUDA0=SIM0 -P "$pin" --dry-run --inputs --format json
py "
import json; p = json.load(open('/dev/stdin'))
assert p['inputs'] and all(x['copy_ms'] is None and x['link_gbps'] is None for x in p['inputs'])" "dry run has no rates" < "$tmp/out"
check bad-host-weights 2 "$profile" -c "$offload" --map CUDA0=SIM0 --host-weights locked --dry-run

finish "graph-run, sched-profile"
