#!/usr/bin/env bash
# llama.cpp model files through the tools as a user runs them: a .gguf given straight to -c,
# --info in every format, backend-compare on each fixture model, and each file of the bad-file
# corpus refused by every tool with one line on stderr and exit 2.
# Usage: gguf_models.sh BACKEND_COMPARE GRAPH_RUN SCHED_PROFILE MODELS_DIR
set -u
compare=$1
run=$2
profile=$3
models=$4
source "$(dirname "$0")/check_lib.sh"

check info-json 0 "$run" --info -c "$models/tiny-llama.gguf" --format json -o "$tmp/info.json"
py "
import json; i = json.load(open('$tmp/info.json'))
assert i['architecture'] == 'llama' and i['layers'] == 2 and i['head_count_kv'] == 2 and i['vocabulary'] == 256, i
assert i['tensor_types'] == [{'type': 'f32', 'tensors': 21, 'bytes': i['bytes']}], i['tensor_types']" info-json-fields
check info-quant 0 "$compare" --info -c "$models/tiny-llama-quant.gguf"
for t in q4_0 q4_1 q5_0 q5_1 q8_0 q4_K q5_K q6_K; do expect_in "info-quant-$t" "$tmp/out" "tensors $t"; done
check info-iq 0 "$run" --info -c "$models/tiny-llama-iq.gguf"
for t in iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m iq4_nl iq4_xs tq1_0 tq2_0 mxfp4; do
  expect_in "info-iq-$t" "$tmp/out" "tensors $t"
done
check info-md 0 "$profile" --info -c "$models/tiny-qwen2.gguf" --format md
expect_in info-md "$tmp/out" "| qkv_bias"

# A file of a real file's shape (scripts/model_fixtures.py --describe, then --like; the GPU lease's
# stand-in for a file too large to carry): the same architecture, tensors, types and sizes as the
# original to graph-run --info, random valid blocks that compute finite logits; --big-layers keeps
# the first layers only.
fixtures=$(dirname "$0")/../../scripts/model_fixtures.py
# model_fixtures.py needs the gguf package: the scripts' own environment (scripts/python-env).
env_python=$("$(dirname "$0")/../../scripts/python-env") || { echo "FAIL: no Python environment (scripts/python-env)"; exit 1; }
for model in "$models/arch/tiny-gemma3.gguf" "$models/tiny-llama-quant.gguf"; do
  name=$(basename "$model" .gguf)
  "$env_python" "$fixtures" --describe "$model" >"$tmp/$name.shape.json" 2>"$tmp/err" || { echo "FAIL $name-describe"; cat "$tmp/err"; failures=$((failures + 1)); }
  "$env_python" "$fixtures" --big "$tmp/$name-like.gguf" --like "$tmp/$name.shape.json" 2>"$tmp/err" ||
    { echo "FAIL $name-like"; cat "$tmp/err"; failures=$((failures + 1)); }
  "$run" --info -c "$model" --format json -o "$tmp/info-a.json" && "$run" --info -c "$tmp/$name-like.gguf" --format json -o "$tmp/info-b.json"
  py "
import json
a, b = json.load(open('$tmp/info-a.json')), json.load(open('$tmp/info-b.json'))
for k in ('file', 'file_bytes', 'name', 'meta'):
    a.pop(k, None); b.pop(k, None)
assert a == b, {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}" "$name-like-info"
  check "$name-like-runs" 0 "$run" -c "$tmp/$name-like.gguf" -r 1 --nonfinite fail
done
# Types without a random-block writer are refused by name.
"$env_python" "$fixtures" --describe "$models/tiny-llama-iq.gguf" >"$tmp/iq.shape.json"
check like-refuses-iq 1 "$env_python" "$fixtures" --big "$tmp/iq-like.gguf" --like "$tmp/iq.shape.json"
expect_in like-refuses-iq-line "$tmp/err" "model_fixtures: --like: token_embd.weight is IQ4_NL, not one of the types"
"$env_python" "$fixtures" --big "$tmp/gemma3-1l.gguf" --like "$tmp/tiny-gemma3.shape.json" --big-layers 1 2>/dev/null
check like-layers 0 "$run" --info -c "$tmp/gemma3-1l.gguf" --format json -o "$tmp/info-1l.json"
py "import json; assert json.load(open('$tmp/info-1l.json'))['layers'] == 1" like-layers-count

for model in "$models"/tiny-*.gguf "$models"/arch/tiny-*.gguf; do
  name=$(basename "$model" .gguf)
  check "$name-compare" 0 "$compare" -c "$model" -b CPU,SIM0 --format json -o "$tmp/c.json"
  py "
import json; r = json.load(open('$tmp/c.json'))
assert r['compared'] > 30 and r['passed'] == r['compared'], r" "$name-compare-report"
done
# The BLAS device computes the quantized products from dequantized weights: still within tolerance.
if "$compare" --list-devices | grep -q "^BLAS"; then
  for name in tiny-llama-quant tiny-llama-q2_k tiny-llama-q3_k_m tiny-llama-iq4_xs tiny-llama-iq; do
    check "$name-compare-blas" 0 "$compare" -c "$models/$name.gguf" -b CPU,BLAS
  done
fi
check run-gguf 0 "$run" -c "$models/tiny-llama.gguf" -r 1 --warmup 0 --format json -o "$tmp/r.json"
# Logits of the last position only by default (llama-bench's measure), of every position or the
# last N when asked, and the same values; backend-compare keeps every position.
check run-gguf-last 0 "$run" -c "$models/tiny-llama-quant.gguf" -p 6 -r 1 --warmup 0 --save-outputs "$tmp/last"
check run-gguf-all 0 "$run" -c "$models/tiny-llama-quant.gguf" -p 6 -r 1 --warmup 0 --outputs all --save-outputs "$tmp/all"
check run-gguf-three 0 "$run" -c "$models/tiny-llama-quant.gguf" -p 6 -r 1 --warmup 0 --outputs 3 --save-outputs "$tmp/three"
py "
import numpy as np
last, every, three = (np.load('$tmp/' + d + '/result_output.npy') for d in ('last', 'all', 'three'))
assert every.shape[0] == 6 and three.shape[0] == 3 and last.size == every.shape[1], (last.shape, every.shape, three.shape)
assert np.allclose(last.ravel(), every[-1], rtol=0, atol=1e-5 * abs(every).max())
assert np.allclose(three, every[-3:], rtol=0, atol=1e-5 * abs(every).max())" run-gguf-outputs
check run-gguf-outputs-bad 2 "$run" -c "$models/tiny-llama-quant.gguf" --outputs some
expect_in run-gguf-outputs-bad "$tmp/err" "--outputs"
# The newer formats through graph-run and sched-profile too (backend-compare ran them above).
check run-gguf-iq 0 "$run" -c "$models/tiny-llama-iq.gguf" -r 1 --warmup 0
check profile-gguf-q3_k_m 0 "$profile" -c "$models/tiny-llama-q3_k_m.gguf" -b SIM0,CPU
expect_in profile-gguf-q3_k_m "$tmp/err" "compute buffer SIM0"

# The other architectures as placed over two devices by layers (llama.cpp's --split-mode layer),
# through the scheduler, against the CPU alone: sliding windows, sinks and experts across a split.
for name in tiny-gemma3 tiny-gpt-oss tiny-phi3 tiny-deepseek2-yarn tiny-qwen3moe-q8_0; do
  cat >"$tmp/split.json" <<EOF
{"graph": {"model": "gguf", "file": "$models/arch/$name.gguf", "params": {"tokens": [1, 17, 255, 42, 3, 200, 99], "n_kv": 12}},
 "placement": {"backends": ["SIM0", "SIM1", "CPU"], "split": {"mode": "layer", "devices": ["SIM0", "SIM1"], "ratios": [1, 1]}}}
EOF
  check "$name-placed-split" 0 "$compare" -c "$tmp/split.json" --placed -b SIM0 --format json -o "$tmp/p.json"
  expect_in "$name-placed-split" "$tmp/err" "0 out of tolerance"
done
# A fault inside the experts' product (of the last model above, a MoE one) is caught, by name, as placed.
check moe-fault-placed 1 "$compare" -c "$tmp/split.json" --placed -b SIM0 -P SIM0:fault_node=ffn_moe_down-1 -o /dev/null
expect_in moe-fault-placed "$tmp/err" "first divergent node"

# Experts kept on the CPU (llama.cpp's -ot exps=CPU): their products run there and no expert weight
# is copied; with op offload at batch 4 the device computes them and copies their weights in.
moe=$(dirname "$models")/../../configs/moe-expert-offload.json
check moe-offload-profile 0 "$profile" -c "$moe" --map CUDA0=SIM0 --format json -o "$tmp/s.json"
py "
import json; s = json.load(open('$tmp/s.json'))
assert s['expert_weight_bytes'] == {'CPU': 98304} and s['expert_copies'] == {'copies': 0, 'bytes': 0}, s" moe-offload-experts-stay
# (every position's logits: with the last alone, the last layer's experts see one row, under the minimum)
check moe-offload-op 0 "$profile" -c "$moe" --map CUDA0=SIM0 -P SIM0:offload_min_batch=4 --outputs all --format json -o "$tmp/s.json"
py "
import json; s = json.load(open('$tmp/s.json'))
assert s['expert_copies'] == {'copies': 6, 'bytes': 98304}, s" moe-offload-experts-copied

for bad in "$models"/bad/*.gguf "$models"/arch/bad/*.gguf; do
  name=$(basename "$bad" .gguf)
  [ "$name" = good ] && continue
  for tool in "$run" "$compare" "$profile"; do
    check "$name-$(basename "$tool")" 2 "$tool" -c "$bad"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL $name: not one line on stderr"; cat "$tmp/err"; failures=$((failures + 1)); }
    expect_in "$name-names-file" "$tmp/err" "$name.gguf"
  done
done
# The hostile corpus (scripts/hostile_fixtures.py): each tool gives the exit code its manifest says;
# a refused file gets one line of at most 1,000 characters naming the file and holding the text the
# manifest gives, with no control character (a newline or escape sequence in a name is shown
# escaped); warnings (a busy machine) aside.
"$python" - "$compare" "$run" "$profile" "$models/hostile" <<'PY' || failures=$((failures + 1))
import json, subprocess, sys
compare, run, profile, folder = sys.argv[1:]
tools = {"backend-compare": compare, "graph-run": run, "sched-profile": profile}
extra = {"backend-compare": ["-b", "CPU,SIM0"], "graph-run": ["-r", "1", "--warmup", "0"], "sched-profile": []}
failed = 0
for name, entry in json.load(open(f"{folder}/manifest.json")).items():
    for tool, want in entry["exit"].items():
        p = subprocess.run([tools[tool], "-c", f"{folder}/{name}.gguf", "-t", "1", "-o", "/dev/null", *extra[tool]],
                           capture_output=True, text=True, errors="replace", timeout=60)
        lines = [l for l in p.stderr.splitlines() if ": warning: " not in l or "output" in l]
        problems = []
        if p.returncode != want:
            problems.append(f"exit {p.returncode}, expected {want}")
        if want == 2 and (len(lines) != 1 or len(lines[0]) > 1000 or f"{name}.gguf" not in lines[0]):
            problems.append(f"{len(lines)} lines of {[len(l) for l in lines]} characters")
        if entry["stderr_has"] not in p.stderr:
            problems.append(f"no {entry['stderr_has']!r} on stderr")
        if any(c in p.stderr for c in "\x1b\r") or any(ord(c) < 32 and c != "\n" for c in p.stderr):
            problems.append("a control character on stderr")
        if problems:
            failed += 1
            print(f"FAIL hostile {name} {tool}: {'; '.join(problems)}: {p.stderr[:600]!r}")
sys.exit(1 if failed else 0)
PY
# NaN outputs: backend-compare fails on them by default, graph-run warns; --nonfinite turns each round.
nan="$models/hostile/nan-weights.gguf"
check nan-compare-default 1 "$compare" -c "$nan" -b CPU,SIM0 -o /dev/null
expect_in nan-compare-default "$tmp/err" "error: output 'result_output' holds 128 NaN and 0 infinite values (of 128) on both sides"
check nan-compare-warn 0 "$compare" -c "$nan" -b CPU,SIM0 -o /dev/null --nonfinite warn
expect_in nan-compare-warn "$tmp/err" "warning: output 'result_output' holds 128 NaN"
check nan-run-default 0 "$run" -c "$nan" -r 1 --warmup 0 -o /dev/null
expect_in nan-run-default "$tmp/err" "warning: output 'result_output' holds 16 NaN and 0 infinite values (of 16) after the last compute on CPU"
check nan-run-fail 1 "$run" -c "$nan" -r 1 --warmup 0 -o /dev/null --nonfinite fail
expect_in nan-run-fail "$tmp/err" "error: output 'result_output'"
check nan-run-placed 1 "$compare" -c "$nan" --placed -o /dev/null
check nan-save-diff 0 "$compare" -c "$nan" -b CPU,SIM0 --save-outputs "$tmp/nan-sim.gguf" --nonfinite warn -o /dev/null
check nan-diff 1 "$compare" -c "$nan" --diff "$tmp/nan-sim.gguf" "$tmp/nan-sim.gguf" -o /dev/null
check nan-bad-flag 2 "$compare" -c "$nan" --nonfinite maybe
# NaN in quantized weights, as a bad conversion leaves it (issue 56): the products' 8-bit activation
# blocks and the dots must carry it to the logits, where the verdicts above see it. Each file is a
# fixture with one tensor's blocks poisoned in place: a q4_K token embedding with every scale d NaN
# (its logits were all exactly 0.0, exit 0), a tq2_0 FFN gate of 0xFF bytes (d NaN: the logits of a
# file without that FFN), and one q4_0 block of the FFN gate (a NaN in one activation of the
# down product, whose q8 block dropped it).
"$env_python" - "$models" "$tmp" <<'PY' || { echo "FAIL: poisoned quantized files"; failures=$((failures + 1)); }
import shutil, struct, sys
from gguf import GGUFReader
models, tmp = sys.argv[1], sys.argv[2]
NAN_F16 = struct.pack("<H", 0x7E00)
def poison(src, dst, tensor, block_bytes, blocks, patch):
    shutil.copy(src, dst)
    t = next(t for t in GGUFReader(src).tensors if t.name == tensor)
    with open(dst, "r+b") as f:
        for b in blocks(t.n_bytes // block_bytes):
            f.seek(t.data_offset + b * block_bytes)
            f.write(patch(block_bytes))
every = lambda n: range(n)
poison(f"{models}/tiny-llama-quant.gguf", f"{tmp}/nan-q4k-embd.gguf", "token_embd.weight", 144, every, lambda n: NAN_F16)
poison(f"{models}/tiny-llama-iq.gguf", f"{tmp}/nan-tq2-gate.gguf", "blk.0.ffn_gate.weight", 66, every, lambda n: b"\xff" * n)
poison(f"{models}/tiny-llama-quant.gguf", f"{tmp}/nan-q4-gate-block.gguf", "blk.0.ffn_gate.weight", 18,
       lambda n: [n // 2], lambda n: NAN_F16)
PY
for poisoned in nan-q4k-embd nan-tq2-gate nan-q4-gate-block; do
  check "$poisoned-run" 0 "$run" -c "$tmp/$poisoned.gguf" -r 1 --warmup 0 -o /dev/null
  expect_in "$poisoned-run-warns" "$tmp/err" "warning: output 'result_output' holds"
  check "$poisoned-compare" 1 "$compare" -c "$tmp/$poisoned.gguf" -b CPU,SIM0 -o /dev/null
  expect_in "$poisoned-compare-fails" "$tmp/err" "error: output 'result_output' holds"
done
# Hybrids (recurrent states the graph reads at its start and overwrites at its end): the end-to-end
# budget starts from the states the compared run started from, so that a drift far past f32
# rounding fails (a budget computed from the overwritten states was 1e11 times too loose).
for pair in "tiny-qwen35 linear_attn_out-0" "tiny-granitehybrid mamba_out-0"; do
  set -- $pair
  check "$1-state-budget" 1 "$compare" -c "$models/arch/$1.gguf" -b CPU,SIM0 -P "SIM0:fault_node=$2,fault_size=0.001" -o /dev/null
  expect_in "$1-state-budget-msg" "$tmp/err" "error grows from node"
done
# --decode: the tokens one at a time, each device keeping its own caches and states, every node
# compared at every token; a state written wrong fails at the token that writes it; against the
# exact device too.
seq=1,17,255,42,3,200,99
for name in tiny-qwen35 tiny-qwen3next tiny-granitehybrid tiny-nemotron-h tiny-lfm2 tiny-qwen3; do
  check "$name-decode" 0 "$compare" -c "$models/arch/$name.gguf" -b CPU,SIM0 --tokens $seq --decode -o /dev/null
  expect_in "$name-decode-last" "$tmp/err" "token 7 of 7 (id 99, position 6): "
done
check decode-exact 0 "$compare" -c "$models/arch/tiny-qwen35.gguf" -b F64,CPU --tokens $seq --decode --format json -o "$tmp/decode.json"
py "
import json; r = json.load(open('$tmp/decode.json'))
assert r['compared'] > 100 and r['failed'] == 0 and r['end_to_end']['ok'], r['end_to_end']" decode-exact-report
check decode-state-fault 1 "$compare" -c "$models/arch/tiny-granitehybrid.gguf" -b CPU,SIM0 --tokens $seq --decode \
  -P "SIM0:fault_node=cache_s_l0 (copy of ssm_scan-0),fault_size=0.001" -o /dev/null
expect_in decode-state-fault-node "$tmp/err" "first divergent node: #21 'cache_s_l0 (copy of ssm_scan-0)' (cpy)"
expect_in decode-state-fault-token "$tmp/err" "(this report: token 1)"
check decode-no-tokens 2 "$compare" -c "$models/arch/tiny-qwen35.gguf" --decode
expect_in decode-no-tokens-msg "$tmp/err" "--decode steps through a llama.cpp model file's tokens: give them with --tokens"
finish "gguf models"
