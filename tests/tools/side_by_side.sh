#!/usr/bin/env bash
# scripts/llama-bench-side-by-side's arithmetic, with stand-ins for llama-bench, graph-run and
# graph-bench that answer known speeds and bandwidths round by round: each cell is the better round,
# the ratio cell gives the rounds' own ratios, and each tool's decode is judged against the mean of
# the read bandwidths measured right before and right after its own run (not one figure for the
# whole run). The model is a real tiny GGUF file, so the bytes a token reads come from the file.
# Usage: side_by_side.sh GRAPH_RUN SOURCE_DIR
set -u
graph_run=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$0")/check_lib.sh"

mkdir -p "$tmp/build/apps" "$tmp/llama" "$tmp/cache" "$tmp/state"
cp "$src/tests/data/models/arch/tiny-qwen3.gguf" "$tmp/cache/tiny.gguf"

# Each stand-in answers its n-th call (a counter file per tool) from a list.
cat >"$tmp/next.sh" <<'EOF'
next() {  # next TOOL: this call's index (0, 1, ...) for TOOL
  local file="$STATE/$1" n=0
  [ -f "$file" ] && n=$(cat "$file")
  echo $((n + 1)) >"$file"
  echo "$n"
}
EOF
# graph-bench: read bandwidths 30, 40, 50, 20, 60, 45 GB/s, in the order they are asked for.
cat >"$tmp/build/apps/graph-bench" <<EOF
#!/usr/bin/env bash
STATE=$tmp/state; source $tmp/next.sh
rates=(30 40 50 20 60 45); n=\$(next bench)
echo "{\"benchmarks\": [{\"name\": \"BM_ReadBandwidth/threads:2/real_time\", \"bytes_per_second\": \${rates[\$n]}e9}]}"
EOF
# llama-bench: round 1 pp64 100 t/s and tg4 100000 t/s, round 2 120 and 80000 (one call per test
# kind; the tiny file's decode as fast as a real one reads memory).
cat >"$tmp/llama/llama-bench" <<EOF
#!/usr/bin/env bash
STATE=$tmp/state; source $tmp/next.sh
echo "loaded CPU backend from $tmp/llama/libggml-cpu-fake.so" >&2
n=\$(next llama); round=\$((n / 2))
pp=(100 120); tg=(100000 80000)
if [ \$((n % 2)) -eq 0 ]; then
  echo "llama pp" >>$tmp/order
  echo "[{\"n_prompt\": 64, \"n_gen\": 0, \"n_depth\": 0, \"avg_ts\": \${pp[\$round]}, \"stddev_ts\": 1}]"
else
  echo "llama tg" >>$tmp/order
  echo "[{\"n_prompt\": 0, \"n_gen\": 4, \"n_depth\": 0, \"avg_ts\": \${tg[\$round]}, \"stddev_ts\": 1}]"
fi
EOF
# graph-run: --info from the real tool; round 1 pp64 200 t/s (320 ms) and tg4 120000 t/s, round 2
# 160 t/s (400 ms) and 160000 t/s.
cat >"$tmp/build/apps/graph-run" <<EOF
#!/usr/bin/env bash
STATE=$tmp/state; source $tmp/next.sh
for a in "\$@"; do [ "\$a" = --info ] && exec "$graph_run" "\$@"; done
echo "\$*" >>$tmp/xb-args
n=\$(next xb); round=\$((n / 2))
pp=(320 400); tg=(0.0333333333 0.025)
if [ \$((n % 2)) -eq 0 ]; then ms=\${pp[\$round]}; echo "xb pp" >>$tmp/order; else ms=\${tg[\$round]}; echo "xb tg" >>$tmp/order; fi
echo "{\"meta\": {\"commit\": \"fake\", \"cpu\": \"Fake CPU\", \"cpu_kernels\": \"scalar\"}, \"runs\": [{\"time_ms\": {\"median\": \$ms}}]}"
EOF
chmod +x "$tmp/build/apps/graph-bench" "$tmp/llama/llama-bench" "$tmp/build/apps/graph-run"

check side-by-side 0 "$python" "$src/scripts/llama-bench-side-by-side" --models tiny --cache "$tmp/cache" -t 2 \
  --prompts 64 --gen 4 --depth 0 --rounds 2 --reps 1 --build "$tmp/build" --llama-cpp "$tmp/llama" \
  -o "$tmp/table.md" --json "$tmp/table.json"
py "
import json
d = json.load(open('$tmp/table.json'))
assert d['read_bandwidths_GB_per_s'] == [30, 40, 50, 20, 60, 45], d['read_bandwidths_GB_per_s']
# Prompts of both, then the decodes back to back; the tools' order swaps in the second round.
order = open('$tmp/order').read().splitlines()
assert order == ['llama pp', 'xb pp', 'llama tg', 'xb tg', 'xb pp', 'llama pp', 'xb tg', 'llama tg'], order
rows = {r['test']: r for r in d['rows']}
pp, tg = rows['pp64'], rows['tg4@d0']
# The better round of each tool, and each round's own ratio.
assert (pp['llama_cpp_tokens_per_s'], pp['xbackend_tokens_per_s'], pp['ratio']) == (120, 200, 1.667), pp
assert pp['round_ratios'] == [2.0, 1.333], pp['round_ratios']
assert (tg['llama_cpp_tokens_per_s'], tg['xbackend_tokens_per_s'], tg['ratio']) == (100000, 160000, 1.6), tg
assert tg['round_ratios'] == [1.2, 2.0] and tg['median_round_ratio'] == 1.6, tg
assert 'of_read_bandwidth' not in pp
# Round 1 measured 30, 40, 50 around llama.cpp's then xbackend's decode, round 2 20, 60, 45 around
# xbackend's then llama.cpp's. xbackend's best decode (round 2) ran between 20 and 60: 40;
# llama.cpp's (round 1) between 30 and 40: 35.
assert tg['read_bandwidth_GB_per_s'] == 40 and tg['llama_cpp_read_bandwidth_GB_per_s'] == 35, tg
per_token = tg['xbackend_GB_per_s'] / 160000
assert per_token > 0 and abs(tg['llama_cpp_GB_per_s'] - per_token * 100000) < 0.01, tg
assert abs(tg['of_read_bandwidth'] - tg['xbackend_GB_per_s'] / 40) < 1e-3, tg
assert abs(tg['llama_cpp_of_read_bandwidth'] - tg['llama_cpp_GB_per_s'] / 35) < 1e-3, tg
" "rounds, ratios and bandwidths"
expect_in table-range "$tmp/table.md" "| 1.67x (1.33-2.00, median 1.67) |"
expect_in table-bandwidth "$tmp/table.md" "read bandwidth 20.0-60.0 GB/s (around every decode) on 2 threads"
expect_in table-machine "$tmp/table.md" "Machine: Fake CPU"

# --cpu-settings reaches every timed graph-run as -P CPU:..., and the table and JSON name it.
rm -f "$tmp/state/"* "$tmp/xb-args"
check side-by-side-settings 0 "$python" "$src/scripts/llama-bench-side-by-side" --models tiny --cache "$tmp/cache" -t 2 \
  --prompts 64 --gen 4 --depth 0 --rounds 2 --reps 1 --build "$tmp/build" --llama-cpp "$tmp/llama" \
  --cpu-settings repack=off -o "$tmp/settings.md" --json "$tmp/settings.json"
py "
import json
calls = open('$tmp/xb-args').read().splitlines()
assert len(calls) == 4 and all('-P CPU:repack=off' in c for c in calls), calls
assert json.load(open('$tmp/settings.json'))['cpu_settings'] == 'repack=off'
" "settings passed to graph-run"
expect_in table-settings "$tmp/settings.md" "(graph-run -P CPU:repack=off, CPU kernels"

finish "llama-bench-side-by-side"
