#!/usr/bin/env bash
# The hostile inputs of the fuzzing reports (issues: hostile inputs, rounds 1 and 2), run as a user runs them
# (`graph-run -c FILE -r 1`): each must give exit 2 and one line on stderr, without a crash or a
# hang (a 20 s guard; results/fuzz.md records the times, all well under a second); the GGUF file
# with a 40M-element metadata array must also take at most 100 MB more RSS than the first input
# (it took 2 GB when each element was kept as a 48-byte value).
# Usage: hostile_inputs.sh GRAPH_RUN
set -u
run=$1
source "$(dirname "$0")/check_lib.sh"

# hostile NAME FILE: graph-run on FILE gives exit 2 and one line; prints the seconds and peak RSS.
hostile() {
  local name=$1 file=$2
  "$python" - "$run" "$file" "$tmp/out" "$tmp/err" <<'PY' >"$tmp/measure" 2>&1
import resource, subprocess, sys, time
run, file, out, err = sys.argv[1:]
start = time.monotonic()
try:
    p = subprocess.run([run, "-c", file, "-r", "1"], stdout=open(out, "w"), stderr=open(err, "w"), timeout=20)
    code = p.returncode
except subprocess.TimeoutExpired:
    code = "timeout"
print(code, round(time.monotonic() - start, 3), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
  read -r code seconds rss_mb <"$tmp/measure"
  echo "$name: exit $code, $seconds s, $rss_mb MB: $(head -c 200 "$tmp/err")"
  if [ "$code" != 2 ]; then echo "FAIL $name: exit $code, expected 2"; cat "$tmp/err"; failures=$((failures + 1)); fi
  if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then echo "FAIL $name: not one line on stderr"; head -c 2000 "$tmp/err"; failures=$((failures + 1)); fi
  if [ "$(wc -c <"$tmp/err")" -gt 1000 ]; then echo "FAIL $name: a line of $(wc -c <"$tmp/err") characters"; failures=$((failures + 1)); fi
  last_rss_mb=$rss_mb
  first_rss_mb=${first_rss_mb:-$rss_mb}
}

config() {  # config NAME JSON
  printf '%s' "$2" >"$tmp/$1.json"
  hostile "$1" "$tmp/$1.json"
}

config huge-shape '{"tensors": {"x": {"shape": [2147483648, 2147483648], "role": "input"}}, "graph": [{"name": "y", "op": "sqr", "args": ["x"]}]}'
config view-stride '{"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "view", "args": ["x"], "params": {"shape": [2, 2], "strides": [9007199254740992, 16, 16]}}]}'
config reshape-wraps '{"tensors": {"x": {"shape": [4]}}, "graph": [{"name": "y", "op": "reshape", "args": ["x"], "params": {"shape": [4294967296, 4294967296, 4294967296, 4]}}]}'
deep_minus=$("$python" -c "print('-' * 20000 + 'n')")
config deep-minus "{\"params\": {\"n\": 2, \"m\": \"$deep_minus\"}, \"tensors\": {\"x\": {\"shape\": [2], \"role\": \"input\"}}, \"graph\": [{\"name\": \"y\", \"op\": \"sqr\", \"args\": [\"x\"]}]}"
deep_parens=$("$python" -c "print('(' * 20000 + 'n' + ')' * 20000)")
config deep-parens "{\"params\": {\"n\": 2, \"m\": \"$deep_parens\"}, \"tensors\": {\"x\": {\"shape\": [2], \"role\": \"input\"}}, \"graph\": [{\"name\": \"y\", \"op\": \"sqr\", \"args\": [\"x\"]}]}"
# Deep but short enough to be parsed: the nesting limit, not the length limit, stops it.
deep_short=$("$python" -c "print('(' * 2000 + 'n' + ')' * 2000)")
config deep-parens-short "{\"params\": {\"n\": 2, \"m\": \"$deep_short\"}, \"tensors\": {\"x\": {\"shape\": [2], \"role\": \"input\"}}, \"graph\": [{\"name\": \"y\", \"op\": \"sqr\", \"args\": [\"x\"]}]}"
config mlp-layers '{"graph": {"model": "mlp", "params": {"n_layers": 2147483647, "n_embd": 8, "n_hidden": 8, "n_batch": 2}}}'
long_name=$("$python" -c "print('q' * 20000)")
config long-unknown-op "{\"tensors\": {\"x\": {\"shape\": [2], \"role\": \"input\"}}, \"graph\": [{\"name\": \"y\", \"op\": \"$long_name\", \"args\": [\"x\"]}]}"
config long-unknown-name "{\"tensors\": {\"x\": {\"shape\": [2], \"role\": \"input\"}}, \"graph\": [{\"name\": \"y\", \"op\": \"sqr\", \"args\": [\"$long_name\"]}]}"

# GGUF images written byte by byte (GGUF v3): an f32 tensor of [2^31, 2^31] in 128 bytes, and one
# metadata array of 40M u8 elements.
"$python" - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def string(s): return struct.pack("<Q", len(s)) + s.encode()
def header(n_tensors, n_kv): return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv)
arch = string("general.architecture") + struct.pack("<I", 8) + string("llama")
t = header(1, 1) + arch + string("token_embd.weight") + struct.pack("<IQQIQ", 2, 2**31, 2**31, 0, 0)
t += b"\0" * (-len(t) % 32)
open(f"{d}/huge-tensor.gguf", "wb").write(t + b"\0" * max(0, 128 - len(t)))
n = 40_000_000
a = header(0, 2) + arch + string("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 0, n) + b"\x01" * n
open(f"{d}/long-array.gguf", "wb").write(a)
# Round 2: 1,100 arrays of 60,000 u8 (64 MB), each short enough to be kept: 57 bytes of memory per
# byte of file, 3.8 GB and up to 36 s, before the metadata's memory was counted as a whole.
with open(f"{d}/many-arrays.gguf", "wb") as f:
    f.write(header(0, 1101) + arch)
    for i in range(1100):
        f.write(string(f"a{i}") + struct.pack("<IIQ", 9, 0, 60000) + b"\x01" * 60000)
PY
hostile huge-gguf-tensor "$tmp/huge-tensor.gguf"
hostile long-gguf-array "$tmp/long-array.gguf"
if [ "$last_rss_mb" -gt $((first_rss_mb + 100)) ]; then
  echo "FAIL long-gguf-array: $last_rss_mb MB of RSS, $first_rss_mb MB for the first input"; failures=$((failures + 1))
fi
hostile many-gguf-arrays "$tmp/many-arrays.gguf"
expect_in many-gguf-arrays "$tmp/err" "take more than 64 MiB of memory"
if [ "$last_rss_mb" -gt $((first_rss_mb + 200)) ]; then
  echo "FAIL many-gguf-arrays: $last_rss_mb MB of RSS, $first_rss_mb MB for the first input"; failures=$((failures + 1))
fi
finish "hostile inputs"
