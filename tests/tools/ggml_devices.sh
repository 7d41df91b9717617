#!/usr/bin/env bash
# ggml's devices through the tools, checked against llama.cpp itself: on every model fixture (and on
# the real Gemma 3 270M file when scripts/models has installed it), ggml:CPU's logits equal the
# logits llama.cpp computes for the same tokens with the same ggml (scripts/llamacpp_logits.cpp
# linked against the libllama that scripts/ggml-setup built beside it) to NMSE <= 1e-10: the bridge
# computes what llama.cpp computes. backend-compare -b CPU,ggml:CPU passes, a fault on SIM0 is caught
# with ggml:CPU as the reference, op-check --mode test -b ggml:CPU runs every case, and bad input
# (a library that is not a ggml backend, a missing one, a device that does not exist) is one line,
# exit 2. A build without ggml's devices says so and exits 77 (skipped).
# Usage: ggml_devices.sh BACKEND_COMPARE GRAPH_RUN OP_CHECK SOURCE_DIR
set -u
compare=$1
graph_run=$2
op_check=$3
source_dir=$(cd "$4" && pwd)
source "$(dirname "$0")/check_lib.sh"

if ! "$graph_run" --list-devices 2>/dev/null | grep -q 'ggml:CPU'; then
  echo "skipped: this build has no ggml devices (configure with XB_GGML=ON after scripts/ggml-setup)"
  exit 77
fi
if ! prefix=$("$source_dir/scripts/ggml-setup" --where 2>"$tmp/where"); then
  echo "skipped: $(cat "$tmp/where") (llama.cpp's logits need the libllama it builds)"
  exit 77
fi

# llama.cpp's own logits, from the libllama of the same ggml build. Its backends are linked in: an
# empty folder for the program's backend directory.
mkdir -p "$tmp/no-backends"
if ! g++ -std=c++17 -O2 -I"$prefix/include" "$source_dir/scripts/llamacpp_logits.cpp" -L"$prefix/lib" -lllama -lggml \
     -lggml-base -Wl,-rpath,"$prefix/lib" -o "$tmp/llamacpp_logits" 2>"$tmp/cc.log"; then
  echo "FAIL: scripts/llamacpp_logits.cpp does not build against $prefix"; cat "$tmp/cc.log"; exit 1
fi

# Every fixture: a config of the file with the manifest's tokens, flash attention off and the whole
# batch in a cache of 256 cells, the rest empty and masked (what llama.cpp runs: its cache pads to
# 256 cells, and soft_max's sums over the padded rows round as llama.cpp's do), the long rope factors
# where llama.cpp takes them.
"$python" - "$source_dir" "$tmp" <<'EOF' >"$tmp/fixtures.txt" || { echo "FAIL: fixture configs"; exit 1; }
import json, sys
from pathlib import Path
root, tmp = Path(sys.argv[1]), Path(sys.argv[2])
for folder in (root / "tests/data/models", root / "tests/data/models/arch"):
    manifest = json.loads((folder / "manifest.json").read_text())
    tokens = manifest["tokens"]
    for name, m in manifest["models"].items():
        if not m.get("llamacpp", {}).get("loads", False):
            continue
        model = str(folder / m["file"])
        config = {"graph": {"model": "gguf", "file": model,
                            "params": {"tokens": tokens, "n_kv": len(tokens), "kv_cells": 256,
                                       "flash_attn": False}}}
        if m["llamacpp"].get("rope_factors") == "long":
            config["tensors"] = {"rope_factors_short.weight": {"init": {"kind": "gguf", "file": model,
                                                                        "tensor": "rope_factors_long.weight"}}}
        (tmp / f"{name}.json").write_text(json.dumps(config))
        print(name, model, ",".join(map(str, tokens)))
EOF

nmse_check() {  # nmse_check NAME GOT.npy WANT.npy BOUND
  py "
import numpy as np
got = np.load('$2').astype(np.float64).reshape(-1); want = np.load('$3').astype(np.float64).reshape(-1)
assert got.shape == want.shape, (got.shape, want.shape)
e = ((got - want) ** 2).sum() / (want ** 2).sum()
assert e <= $4, 'nmse %.3g > $4' % e
print('$1: ggml:CPU against llama.cpp nmse %.3g' % e)" "$1"
}

while read -r name model tokens; do
  cfg=$tmp/$name.json
  check "$name-llamacpp" 0 "$tmp/llamacpp_logits" "$tmp/no-backends" "$model" "$tmp/$name.llamacpp.npy" "$tokens"
  check "$name-ggml-run" 0 "$graph_run" -c "$cfg" -b ggml:CPU --outputs all -r 1 --warmup 0 --save-outputs "$tmp/$name"
  nmse_check "$name" "$tmp/$name/result_output.npy" "$tmp/$name.llamacpp.npy" 1e-10
  check "$name-compare" 0 "$compare" -c "$cfg" -b CPU,ggml:CPU --format json -o "$tmp/$name-compare.json"
  py "
import json; r = json.load(open('$tmp/$name-compare.json'))
assert r['introduced'] == 0 and r['end_to_end']['ok'], (r['introduced'], r['end_to_end'])
assert r['skipped'] == 0, r['skipped']" "$name-compare-verdict"
done <"$tmp/fixtures.txt"

# ggml as the reference still catches a wrong xbackend device, and names the node.
cfg=$tmp/tiny-qwen3.json
check fault-caught 1 "$compare" -c "$cfg" -b ggml:CPU,SIM0 -P SIM0:fault_node=ffn_out-0
expect_in fault-named "$tmp/err" "first divergent node: #[0-9]* 'ffn_out-0'"
# And a ggml device as the target is judged like any other: with F64 as the truth, node by node.
check truth 0 "$compare" -c "$cfg" -b CPU,ggml:CPU --truth F64
expect_in truth-line "$tmp/err" "against the truth: the target is closer at"

# In a placement: a layer split with ggml:CPU as one of its devices, scheduled (copies to and from
# ggml's memory) and checked node by node against the CPU alone.
check placed 0 "$compare" -c "$source_dir/configs/llama-decoder-split.json" --map CUDA0=ggml:CPU --map CUDA1=SIM0 --placed
expect_in placed-line "$tmp/err" "placed on ggml:CPU,SIM0,CPU against CPU alone"

# The real model, when installed: the same check on Gemma 3 270M Q4_K_M as published.
if model=$("$source_dir/scripts/models" --where 2>/dev/null); then
  tokens=2,818,5279,529,7001,563,9079,236761,1030,2117,4055,1047
  # The model file itself on the command line, as a user runs it: --tokens and --kv-cells.
  printf '{"graph": {"model": "gguf", "file": "%s", "params": {"tokens": [%s], "kv_cells": 256, "flash_attn": false}}}' "$model" "$tokens" \
    >"$tmp/gemma.json"
  check gemma-llamacpp 0 "$tmp/llamacpp_logits" "$tmp/no-backends" "$model" "$tmp/gemma.llamacpp.npy" "$tokens"
  check gemma-ggml-run 0 "$graph_run" -c "$model" --tokens "$tokens" --kv-cells 256 -b ggml:CPU --outputs all -r 1 \
    --warmup 0 --save-outputs "$tmp/gemma"
  nmse_check gemma "$tmp/gemma/result_output.npy" "$tmp/gemma.llamacpp.npy" 1e-10
  check gemma-compare 0 "$compare" -c "$tmp/gemma.json" -b CPU,ggml:CPU
else
  echo "note: the real model is not installed (scripts/models); its check was skipped"
fi

# op-check: every case on ggml:CPU against the float64 references. ggml's CPU differs from them in
# known ways, each a finding about ggml (results/ggml/): GELU through an f16 table (gelu, gelu_quick,
# geglu: NMSE about 1e-7, over the element-wise tolerance); sum of a tensor whose rows are not
# packed (it reads dim 0 as packed: a wrong sum, silently); argsort and top_k order equal values
# and NaN otherwise than the references' stable order. Anything else failing is the bridge's bug,
# but for the non-finite twins below.
check op-check 1 "$op_check" --mode test -b ggml:CPU
py "
import re
out = open('$tmp/err').read()
m = re.search(r'ggml:CPU against CPU: (\d+) passed, (\d+) failed, (\d+) unsupported', out)
assert m, 'no summary line'
passed, failed, unsupported = map(int, m.groups())
reasons = dict(re.findall(r'^  ggml:CPU (\S+): (.*)$', out, re.M))
twin = re.compile(r'_(nan|inf)_in\d+$')
failing = {n for n in reasons if not twin.search(n)}
known = {'gelu_f32', 'gelu_quick_f32', 'geglu_f32', 'geglu_swapped_f32', 'geglu_split_f32', 'geglu_split_pairs_f32',
         'geglu_shorthand', 'sum_permuted_f32', 'argsort_ties_asc', 'argsort_nan_asc', 'argsort_ties_desc',
         'argsort_nan_desc', 'top_k_1', 'top_k_4', 'top_k_8'}
assert failing == known, ('new failures', sorted(failing - known), 'no longer failing', sorted(known - failing))
# The non-finite twins (NaN or inf in one input): ggml's products drop a NaN from their 8-bit
# activation blocks, its relu, clamp and l2_norm drop it too (results/ggml/nonfinite-2026-12-07.md),
# so it fails many by giving finite values where the truth is not. Never the other way: xbackend's
# devices are non-finite exactly where the truth is (NonFinite/OpTest), so where ggml's output is
# non-finite and the truth's is not, xbackend's would be finite where ggml's is not.
# One exception, measured: on a long causal prompt (230 keys, 150 queries, GQA 4) with NaN in V,
# ggml's CPU gives NaN to queries whose attended V rows are all finite: NaN in rows the causal mask
# hides from them reaches them (results/ggml/nonfinite-2026-12-07.md); xbackend never reads a
# masked key's V row.
ggml_reads_masked_values = {'flash_attn_ext_tiled_gqa4_causal_long_f16_nan_in2'}
twins = {n: why for n, why in reasons.items() if twin.search(n)}
wrong_way = {n: why for n, why in twins.items()
             if not re.search(r'expected -?(nan|inf)$', why) and twin.sub('', n) not in known
             and n not in ggml_reads_masked_values}
assert not wrong_way, ('ggml non-finite where the truth is finite', wrong_way)
assert passed >= 550 and failed == len(reasons), (passed, failed, unsupported)
print('op-check on ggml:CPU: %d passed, %d known deviations of ggml, %d non-finite twins where it drops NaN, %d unsupported'
      % (passed, len(failing), len(twins), unsupported))" op-check-cases

# Bad input: one line, exit 2.
one_line() {  # one_line NAME TEXT: stderr is that one line
  expect_in "$1" "$tmp/err" "$2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "FAIL $1: more than one line"; cat "$tmp/err"; failures=$((failures + 1)); }
}
check bad-device 2 "$compare" -c "$cfg" -b CPU,ggml:NOPE
one_line bad-device-line "ggml:NOPE"
check missing-library 2 env XB_GGML_BACKENDS=/nonexistent/libggml-x.so "$compare" -c "$cfg" -b CPU,ggml:CPU
one_line missing-library-line "XB_GGML_BACKENDS: /nonexistent/libggml-x.so: no such file"
check not-a-backend 2 env XB_GGML_BACKENDS="$prefix/lib/libllama.so" "$compare" -c "$cfg" -b CPU,ggml:CPU
one_line not-a-backend-line "not a ggml backend library"
echo "this is not a shared library" >"$tmp/junk.so"
check junk-library 2 env XB_GGML_BACKENDS="$tmp/junk.so" "$graph_run" -c "$cfg" -b ggml:CPU
one_line junk-library-line "cannot be loaded"

finish "ggml devices"
