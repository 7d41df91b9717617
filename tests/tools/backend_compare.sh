#!/usr/bin/env bash
# End-to-end checks of backend-compare as a user runs it: exit codes, the fault it must catch,
# skipped nodes, formats, and clear errors. Usage: backend_compare.sh BINARY CONFIG_DIR
set -u
bin=$1
configs=$2
source "$(dirname "$0")/check_lib.sh"

# The default pair is the CPU against the first GPU, else SIM0; the checks below name SIM0 so that
# they mean the same on a machine with a GPU.
check default 0 "$bin" -c "$configs/default.json"
expect_in default-summary "$tmp/err" "0 out of tolerance"
if ! "$bin" --list-devices | grep -q "^CUDA0"; then expect_in default-labelled "$tmp/err" "simulated"; fi

# A fault on node 11 of the simulated device must be found there, and nowhere before it.
check fault 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --stop-at-first
expect_in fault-node "$tmp/err" "first divergent node: #11"
check fault-json 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --format json -o "$tmp/f.json"
"$python" -c "
import json; r = json.load(open('$tmp/f.json'))
assert r['backends'] == ['CPU', 'SIM0'] and r['first_divergent'] == 11
m = r['meta']
assert m['tool'] == 'backend-compare' and m['commit'] and m['build_type'] and m['cpu_kernels'] in ('scalar', 'avx2', 'avx512'), m
assert m['date'].endswith('Z') and isinstance(m['n_cpus'], int) and isinstance(m['gpus'], list), m
assert m['config']['path'].endswith('default.json') and len(m['config']['hash']) == 16, m
assert r['compared'] == r['passed'] + r['failed'] == len([n for n in r['nodes'] if 'ok' in n])
bad = [n for n in r['nodes'] if not n.get('ok', True)]
assert bad[0]['index'] == 11 and bad[0]['nmse'] > bad[0]['tolerance']
assert all(n['ok'] for n in r['nodes'] if n['index'] < 11)
for k in ('index', 'name', 'op', 'shape', 'type', 'nmse', 'max_abs', 'cos', 'ok'): assert k in bad[0], k" \
  || { echo "FAIL fault-json: report fields"; failures=$((failures + 1)); }

# --isolate finds exactly the faulty node: only node 11 is out of tolerance, introduced there.
# Propagated (the default), node 11 is introduced and every later failure inherited. Every format
# carries the origin and the worst element; JSON the first divergent node's inputs too.
check isolate 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --isolate --format json -o "$tmp/iso.json"
expect_in isolate-summary "$tmp/err" "1 out of tolerance (1 introduced, 0 inherited)"
expect_in isolate-worst "$tmp/err" "worst element"
"$python" -c "
import json
iso = json.load(open('$tmp/iso.json')); prop = json.load(open('$tmp/f.json'))
assert iso['mode'] == 'isolated' and prop['mode'] == 'propagated'
bad = [n for n in iso['nodes'] if not n.get('ok', True)]
assert [n['index'] for n in bad] == [11] and bad[0]['origin'] == 'introduced', bad
assert iso['introduced'] == 1 and iso['inherited'] == 0 and iso['failed'] == 1
pbad = [n for n in prop['nodes'] if not n.get('ok', True)]
assert pbad[0]['index'] == 11 and pbad[0]['origin'] == 'introduced'
assert all(n['origin'] == 'inherited' for n in pbad[1:]) and len(pbad) > 1
assert prop['introduced'] == 1 and prop['inherited'] == len(pbad) - 1
f = prop['first_divergent_node']
assert f['index'] == 11 and f['origin'] == 'introduced' and f['inputs'], f
assert all(i['nmse'] <= 1e-7 for i in f['inputs']), f['inputs']
w = f['worst']
assert w['index'] >= 0 and len(w['coords']) == 4 and w['target'] != w['reference'], w" \
  || { echo "FAIL isolate: one introduced node, the rest inherited"; failures=$((failures + 1)); }
check isolate-md 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --isolate --format md
expect_in isolate-md-origin "$tmp/out" "| introduced |"
expect_in isolate-md-header "$tmp/out" "worst (target vs reference)"

# A product that differs within its own tolerance (5e-4) but past the element-wise nodes' (1e-7),
# as a quantized product differs between the CPU and a GPU: every node after it that fails is
# computed again from the CPU's inputs, is within tolerance that way, and is inherited. On a
# quantized model (gguf-example) that is within what the CPU's own rounding of the activations
# allows at the outputs, so the comparison passes (--stop-at-first does not stop at inherited
# nodes).
quant="$configs/gguf-example.json"
check carried 0 "$bin" -c "$quant" -b CPU,SIM0 -P "SIM0:fault_node=Vcur-0 (mul_mat),fault_size=0.001" \
  --stop-at-first --format json -o "$tmp/carried.json"
expect_in carried-summary "$tmp/err" "(0 introduced, "
expect_in carried-note "$tmp/err" "no node introduces error"
expect_in carried-outputs "$tmp/err" "outputs within their end-to-end tolerance"
py "
import json; r = json.load(open('$tmp/carried.json'))
bad = [n for n in r['nodes'] if not n.get('ok', True)]
assert len(bad) > 3 and all(n['origin'] == 'inherited' for n in bad), bad
assert r['inherited'] == r['failed'] == len(bad) and r['introduced'] == 0 and r['first_divergent'] is None
assert r['compared'] == 42, r['compared']
n9 = [n for n in r['nodes'] if n['name'] == 'Vcur-0 (mul_mat)'][0]
assert n9['ok'] and 1e-7 < n9['nmse'] < 5e-4, n9
e = r['end_to_end']
assert e['judged'] and e['ok'] and e['margin'] == 10, e
o = e['outputs'][0]
assert o['name'] == 'result_output' and o['kind'] == 'float' and 0 < o['nmse'] < o['tolerance'], o
assert abs(o['tolerance'] - 10 * o['reference_error']) < 1e-9 * o['tolerance'], o
assert all('budget' in n for n in r['nodes'] if 'nmse' in n)" "carried: every failure inherited, outputs within"
# The same fault on an f32 model: each node keeps within its own tolerance or inherits, but the
# outputs drift 1e5 times past what f32 rounding explains: the end-to-end verdict fails and names
# the product as the node the error grows from.
check carried-f32 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11,fault_size=0.001 \
  --format json -o "$tmp/carried-f32.json"
expect_in carried-f32-summary "$tmp/err" "(0 introduced, "
expect_in carried-f32-output "$tmp/err" "output #51 'result_output' is beyond its end-to-end tolerance"
expect_in carried-f32-growth "$tmp/err" "error grows from node #11 "
py "
import json; r = json.load(open('$tmp/carried-f32.json')); e = r['end_to_end']
assert r['first_divergent'] is None and not e['ok'] and e['growth_node']['index'] == 11, e
assert e['growth_node']['jump'] > 1e3 and e['outputs'][0]['nmse'] > 1e3 * e['outputs'][0]['tolerance'], e" \
  "carried-f32: the outputs fail, growing from node 11"
check carried-f32-margin 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11,fault_size=0.001 \
  --e2e-margin 1e7 -o /dev/null
# The same small difference carried into a node that also computes wrong (a second small fault,
# on a rope after it): that node introduces error, though its input differed already.
rope=$("$python" -c "
import json; r = json.load(open('$tmp/carried.json'))
print([n['name'] for n in r['nodes'] if n['op'] == 'rope' and not n['ok']][0])")
check carried-and-made 1 "$bin" -c "$quant" -b CPU,SIM0 -P "SIM0:fault_node=Vcur-0 (mul_mat)+$rope,fault_size=0.001" \
  --format json -o "$tmp/made.json"
py "
import json; r = json.load(open('$tmp/made.json'))
f = r['first_divergent_node']
assert f['name'] == '$rope' and f['origin'] == 'introduced' and r['introduced'] == 1, f
assert any(i['nmse'] > 1e-7 for i in f['inputs']), f['inputs']" "carried-and-made: the rope introduces error"
# Saved results carry no way to compute again: the sources' recorded errors decide, the same way.
# Saved and loaded back, a smaller difference: the loaded run cannot see attn_out's input (a view of
# the attention output, not saved), and from 3e-4 up the attention output's product amplifies the
# carried difference past its own tolerance while its input stays within theirs.
check carried-save 0 "$bin" -c "$quant" -b CPU,SIM0 -P "SIM0:fault_node=Vcur-0 (mul_mat),fault_size=0.0001" \
  --save-outputs "$tmp/carried.gguf"
check carried-load 0 "$bin" -c "$quant" -b CPU --load-reference "$tmp/carried.gguf"
expect_in carried-load-summary "$tmp/err" "(0 introduced, "
# The experts' products are products too: a GPU that rounds the activations of a quantized expert
# product differently (NMSE ~3e-5 on an H100) is within mul_mat_id's 5e-4 and passes, while an
# expert product off by NMSE ~2.5e-3 is caught where it is made.
moe="$configs/../tests/data/models/arch/tiny-qwen3moe-q8_0.gguf"
check moe-rounding 0 "$bin" -c "$moe" -b CPU,SIM0 -P SIM0:fault_node=ffn_moe_gate-0,fault_size=0.005 \
  --format json -o "$tmp/moe.json"
py "
import json; r = json.load(open('$tmp/moe.json'))
g = [n for n in r['nodes'] if n['name'] == 'ffn_moe_gate-0'][0]
assert g['op'] == 'mul_mat_id' and g['ok'] and 1e-7 < g['nmse'] < g['tolerance'] == 5e-4, g
assert r['introduced'] == 0 and r['end_to_end']['ok'], r['end_to_end']" "moe-rounding: the expert product within 5e-4"
check moe-fault 1 "$bin" -c "$moe" -b CPU,SIM0 -P SIM0:fault_node=ffn_moe_gate-0,fault_size=0.05
expect_in moe-fault-node "$tmp/err" "first divergent node: #33 'ffn_moe_gate-0' (mul_mat_id)"
check fault-list-bad-name 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P "SIM0:fault_node=11+no_such_node"
expect_in fault-list-bad-name-msg "$tmp/err" "unknown node 'no_such_node'"
check fault-size-bad 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11,fault_size=3
expect_in fault-size-bad-msg "$tmp/err" "fault_size"
# A fault that names a node works like its index; one that names nothing, or a view (never
# computed), would inject nothing and pass: it is an error.
name11=$("$python" -c "import json; print([n['name'] for n in json.load(open('$tmp/f.json'))['nodes'] if n['index'] == 11][0])")
check fault-by-name 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P "SIM0:fault_node=$name11" --stop-at-first
expect_in fault-by-name-node "$tmp/err" "first divergent node: #11"
check fault-bad-name 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=no_such_node
expect_in fault-bad-name-msg "$tmp/err" "unknown node 'no_such_node'"
view=$("$python" -c "
import json; seen = {n['index'] for n in json.load(open('$tmp/f.json'))['nodes']}
print(min(i for i in range(max(seen)) if i not in seen))")
check fault-view 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P "SIM0:fault_node=$view"
expect_in fault-view-msg "$tmp/err" "which no backend computes"
check fault-past-end 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=99999

# A fault that would inject nothing is an error, not a pass: on a device that takes no part, or on
# a node the target does not compute.
check fault-other-device 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM1:fault_node=11
expect_in fault-other-device-msg "$tmp/err" "SIM1 takes no part in this comparison (CPU against SIM0)"
rope_index=$("$python" -c "import json; print([n['index'] for n in json.load(open('$tmp/f.json'))['nodes'] if n['op'] == 'rope'][0])")
check fault-unsupported 2 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P "SIM0:unsupported=rope,fault_node=$rope_index"
expect_in fault-unsupported-msg "$tmp/err" "was not computed (SIM0 does not support rope), so the fault injected nothing"
check fault-diff 2 "$bin" -c "$configs/default.json" --diff a.gguf b.gguf -P SIM0:fault_node=11
expect_in fault-diff-msg "$tmp/err" "--diff computes nothing"

# What the README and --help show: a fault on node 11 of the 4-layer decoder is caught there, with
# the outputs beyond their end-to-end tolerance growing from it.
check readme-example 1 "$bin" -c "$configs/llama-decoder.json" -b CPU,SIM0 -P SIM0:fault_node=11
expect_in readme-example-node "$tmp/err" "first divergent node: #11 'Vcur-0 (mul_mat)'"
expect_in readme-example-growth "$tmp/err" "error grows from node #11 'Vcur-0 (mul_mat)'"
check help-view 2 "$bin" -c "$configs/llama-decoder.json" -b CPU,SIM0 -P SIM0:fault_node=12
expect_in help-view-msg "$tmp/err" "is a view (reshape)"

# --plot: a PNG (or SVG) of the verdict where matplotlib is there, one clear line where it is not
# (a matplotlib that fails to import stands in for a machine without it), checked before anything
# is computed.
plot_script="$configs/../scripts/compare_plot.py"
if "$python" -c "import matplotlib" 2>/dev/null; then
  check plot 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --plot "$tmp/v.png" -o /dev/null
  expect_in plot-said "$tmp/err" "wrote $tmp/v.png"
  py "
d = open('$tmp/v.png', 'rb').read()
assert d[:8] == b'\\x89PNG\\r\\n\\x1a\\n' and len(d) > 10000, len(d)" plot-png
  check plot-svg 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 --plot "$tmp/v.svg" -o /dev/null
  expect_in plot-svg-file "$tmp/v.svg" "<svg"
  # The script alone, on a saved report.
  check plot-script 0 "$python" "$plot_script" "$tmp/f.json" "$tmp/f.png" --title "node 11"
  py "import os; assert os.path.getsize('$tmp/f.png') > 10000" plot-script-png
else
  echo "note: matplotlib is not installed for $python; the PNG checks of --plot are skipped"
fi
mkdir -p "$tmp/nompl/matplotlib"
echo 'raise ImportError("matplotlib stands absent for this test")' >"$tmp/nompl/matplotlib/__init__.py"
check plot-no-matplotlib 2 env PYTHONPATH="$tmp/nompl" "$bin" -c "$configs/default.json" -b CPU,SIM0 --plot "$tmp/n.png"
expect_in plot-no-matplotlib-msg "$tmp/err" "backend-compare: --plot needs matplotlib"
py "assert len(open('$tmp/err').read().splitlines()) == 1, open('$tmp/err').read()" plot-no-matplotlib-one-line
py "import os; assert not os.path.exists('$tmp/n.png')" plot-no-matplotlib-no-file
check plot-script-no-matplotlib 3 env PYTHONPATH="$tmp/nompl" "$python" "$plot_script" "$tmp/f.json" "$tmp/n.png"
expect_in plot-script-no-matplotlib-msg "$tmp/err" "compare_plot: needs matplotlib (Debian: apt-get install python3-matplotlib)"
check plot-bad-suffix 2 "$bin" -c "$configs/default.json" --plot "$tmp/v.jpg"
expect_in plot-bad-suffix-msg "$tmp/err" "must end in .png or .svg"

check unsupported 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:unsupported=rope --format json -o "$tmp/r.json"
"$python" -c "import json,sys; r=json.load(open('$tmp/r.json')); sys.exit(0 if r['skipped']==4==sum('skipped' in n for n in r['nodes']) and r['first_divergent'] is None else 1)" \
  || { echo "FAIL unsupported: expected 4 skipped rope nodes"; failures=$((failures + 1)); }

# Results saved on one machine are checked later against another backend's run.
check save 0 "$bin" -c "$configs/default.json" -b CPU,SIM0 --save-outputs "$tmp/sim.gguf"
check load-same 0 "$bin" -c "$configs/default.json" -b CPU --load-reference "$tmp/sim.gguf"
expect_in load-summary "$tmp/err" "against SIM0 results"
check save-faulty 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --save-outputs "$tmp/bad.gguf"
check load-faulty 1 "$bin" -c "$configs/default.json" --load-reference "$tmp/bad.gguf"
expect_in load-faulty-node "$tmp/err" "first divergent node: #11"
check load-other-config 2 "$bin" -c "$configs/mlp.json" --load-reference "$tmp/sim.gguf"
expect_in load-other-config-says "$tmp/err" "none of the nodes of"
check load-missing 2 "$bin" -c "$configs/default.json" --load-reference "$tmp/none.gguf"

# Two saved runs diffed without computing: the faulty one against the good one finds node 11
# introduced, the good one against itself passes, another config's file is refused.
check diff-faulty 1 "$bin" -c "$configs/default.json" --diff "$tmp/sim.gguf" "$tmp/bad.gguf" --format json -o "$tmp/d.json"
expect_in diff-faulty-says "$tmp/err" "both saved (nothing computed)"
"$python" -c "
import json; r = json.load(open('$tmp/d.json'))
assert r['mode'] == 'saved' and r['first_divergent'] == 11 and r['introduced'] == 1, r['first_divergent_node']" \
  || { echo "FAIL diff-faulty: node 11 introduced"; failures=$((failures + 1)); }
check diff-same 0 "$bin" -c "$configs/default.json" --diff "$tmp/sim.gguf" "$tmp/sim.gguf"
check diff-other-config 2 "$bin" -c "$configs/mlp.json" --diff "$tmp/sim.gguf" "$tmp/bad.gguf"
check diff-one-file 2 "$bin" -c "$configs/default.json" --diff "$tmp/sim.gguf"
check diff-missing 2 "$bin" -c "$configs/default.json" --diff "$tmp/sim.gguf" "$tmp/none.gguf"

check tolerance 1 "$bin" -c "$configs/default.json" -b CPU,SIM0 -P SIM0:fault_node=11 --tol mul_mat=1e-30 --tol default=1e-30
# A node that quantizes is held to its format's rounding error (q4_K: 5e-3), the rest to their op's.
check quantizing 0 "$bin" -c "$(dirname "$0")/../data/quantize_roundtrip.json" -b CPU,SIM0 --format json -o "$tmp/q.json"
"$python" -c "
import json; r = json.load(open('$tmp/q.json')); tol = {n['name']: n['tolerance'] for n in r['nodes']}
assert tol == {'q': 5e-3, 'back': 1e-7}, tol" \
  || { echo "FAIL quantizing: tolerances by type"; failures=$((failures + 1)); }
check missing-config 2 "$bin" -c "$tmp/nope.json"
expect_in missing-config-msg "$tmp/err" "nope.json"
check missing-device 2 "$bin" -c "$configs/default.json" -b CPU,CUDA7
expect_in missing-device-msg "$tmp/err" "available: CPU"
check bad-flag 2 "$bin" --bogus
check bad-tol 2 "$bin" -c "$configs/default.json" --tol nosuchop=1
check help 0 "$bin" --help
expect_in help-example "$tmp/out" "Examples:"
check list 0 "$bin" --list-devices
expect_in list-sim "$tmp/out" "SIM0"
expect_in list-kernels "$tmp/out" " kernels"
# The kernel set can be forced lower; a name that is no set is refused (exit 2) instead of looking forced.
check list-scalar 0 env XB_CPU_ISA=scalar "$bin" --list-devices
expect_in list-scalar-set "$tmp/out" "scalar kernels"
check list-bogus 2 env XB_CPU_ISA=avx-2 "$bin" --list-devices
expect_in list-bogus-set "$tmp/err" "XB_CPU_ISA=avx-2: not a kernel set"

finish "backend-compare"
