#!/usr/bin/env bash
# The tools' messages for a user's mistakes, each one line on stderr with exit 2: numeric ranges
# that read as ranges, a suggestion for a misspelled flag, and the operating system's reason when a
# file cannot be opened or created.
# Usage: messages.sh GRAPH_RUN SCHED_PROFILE BACKEND_COMPARE OP_CHECK GRAPH_BENCH|"" CONFIG_DIR DATA_DIR
set -u
run=$1
profile=$2
compare=$3
opcheck=$4
bench=$5
configs=$6
data=$7
source "$(dirname "$0")/check_lib.sh"

# says NAME TEXT: the last command printed exactly one line on stderr, holding TEXT (besides the
# warnings of a timing tool on a busy machine).
says() {
  local lines
  lines=$(grep -vc ": warning: " "$tmp/err")
  if [ "$lines" -ne 1 ]; then echo "FAIL $1: $lines lines on stderr, expected 1"; cat "$tmp/err"; failures=$((failures + 1)); fi
  expect_in "$1" "$tmp/err" "$2"
}

# --- Ranges: the bound in words, never the limits of a double (CLI11 printed a 309-digit number).
check threads-0 2 "$run" -t 0
says threads-0 "graph-run: --threads: 0 is too small (at least 1)"
check threads-list-0 2 "$run" -t 1,0
says threads-list-0 "graph-run: --threads: 0 is too small (at least 1)"
check reps-0 2 "$run" -r 0
says reps-0 "graph-run: --reps: 0 is too small (at least 1)"
check warmup-negative 2 "$run" --warmup -1
says warmup-negative "graph-run: --warmup: -1 is too small (at least 0)"
check reps-not-a-number 2 "$run" -r many
says reps-not-a-number "graph-run: --reps: many is not a number"
check profile-reps-0 2 "$profile" -r 0
says profile-reps-0 "sched-profile: --reps: 0 is too small (at least 1)"
check compare-threads-0 2 "$compare" -t 0
says compare-threads-0 "backend-compare: --threads: 0 is too small (at least 1)"
check jobs-0 2 "$opcheck" -j 0
says jobs-0 "op-check: --jobs: 0 is too small (at least 1)"
check perf-time-0 2 "$opcheck" --perf-time 0
says perf-time-0 "op-check: --perf-time: 0 is too small (more than 0)"
check prompt-0 2 "$run" -p 0
says prompt-0 "graph-run: --n-prompt: 0 is too small (at least 1)"
check depth-negative 2 "$run" -d -1
says depth-negative "graph-run: --n-depth: -1 is too small (at least 0)"
check ngl-negative 2 "$run" --ngl -1
says ngl-negative "graph-run: --ngl: -1 is too small (at least 0)"
check tokens-and-prompt 2 "$run" -c "$data/models/tiny-llama.gguf" --tokens 1,2,3 -p 8
says tokens-and-prompt "graph-run: --tokens gives the batch itself; -p and -n set a batch of random ids: give one or the other"
check kv-cells-small 2 "$run" -c "$data/models/tiny-llama.gguf" --tokens 1,2,3 --kv-cells 2
says kv-cells-small "graph-run: $data/models/tiny-llama.gguf: /graph/params/kv_cells: kv_cells (2) cannot hold the cache's 3 positions"
check kv-cells-config 2 "$run" -c "$configs/mlp.json" --kv-cells 256
says kv-cells-config "graph-run: $configs/mlp.json: /graph: --kv-cells pads a llama.cpp model file's (gguf) cache; this config's graph has no such cache"
check tokens-label 0 "$run" -c "$data/models/tiny-llama.gguf" --tokens 1,17,255,42,3 -r 1 --warmup 0
expect_in tokens-label "$tmp/out" " pp5 "
check help-ranges 0 "$run" --help
expect_in help-ranges "$tmp/out" "INT:POSITIVE"
py "
import re; text = open('$tmp/out').read()
assert not re.search(r'[0-9]{20}', text), 'a number of 20 digits or more in --help'" "help-no-long-numbers"

# --- Misspelled flags: the closest option, in every tool.
check suggest-run 2 "$run" --repz 3
says suggest-run "graph-run: unknown option --repz; did you mean --reps?"
check suggest-run-value 2 "$run" --warmpu=3
says suggest-run-value "graph-run: unknown option --warmpu; did you mean --warmup?"
check suggest-profile 2 "$profile" --dry-rn
says suggest-profile "sched-profile: unknown option --dry-rn; did you mean --dry-run?"
check suggest-compare 2 "$compare" --stop-at-frist
says suggest-compare "backend-compare: unknown option --stop-at-frist; did you mean --stop-at-first?"
check suggest-opcheck 2 "$opcheck" --list-case
says suggest-opcheck "op-check: unknown option --list-case; did you mean --list-cases?"
check suggest-single-dash 2 "$compare" -seed 3
says suggest-single-dash "backend-compare: unknown option -seed; did you mean --seed?"
check unknown-far 2 "$run" --frobnicate
says unknown-far "graph-run: unknown option --frobnicate (--help lists the options)"
check stray-argument 2 "$run" extra
says stray-argument "graph-run: unexpected argument 'extra' (--help lists the options)"
if [ -n "$bench" ]; then
  check suggest-bench 2 "$bench" --benchmark_fitler=BM_Memcpy
  says suggest-bench "graph-bench: unknown option --benchmark_fitler; did you mean --benchmark_filter?"
fi

# --- Files: the path, what could not be done, and the operating system's reason.
check config-missing 2 "$run" -c "$tmp/none.json"
says config-missing "$tmp/none.json: cannot open the config file: No such file or directory"
check config-folder 2 "$profile" -c "$tmp" --dry-run
says config-folder "$tmp: cannot open the config file: Is a directory"
check model-missing 2 "$run" -c "$tmp/none.gguf" --info
says model-missing "$tmp/none.gguf: cannot open the GGUF file: No such file or directory"
check npy-missing 2 "$run" -c "$data/bad_missing_npy.json" -r 1
says npy-missing "missing.npy: cannot open the .npy file: No such file or directory"
check reference-missing 2 "$compare" -c "$configs/default.json" -b SIM0 --load-reference "$tmp/none.gguf"
says reference-missing "$tmp/none.gguf: cannot open the GGUF file: No such file or directory"
check runs-missing 2 "$run" --compare "$tmp/none.json" "$tmp/none.json"
says runs-missing "$tmp/none.json: cannot open the report (--compare): No such file or directory"
check output-no-folder 2 "$run" -c "$configs/default.json" -r 1 -o "$tmp/no-folder/run.json"
says output-no-folder "$tmp/no-folder/run.json: cannot create the report (-o): No such file or directory"
check output-folder 2 "$profile" -c "$configs/default.json" --dry-run -o "$tmp"
says output-folder "$tmp: cannot create the report (-o): Is a directory"
check trace-folder 2 "$run" -c "$configs/default.json" -r 1 --trace "$tmp"
says trace-folder "$tmp: cannot create the trace (--trace): Is a directory"
check compare-save-no-folder 2 "$compare" -c "$configs/default.json" -b CPU,SIM0 --save-outputs "$tmp/no-folder/r.gguf"
says compare-save-no-folder "$tmp/no-folder/r.gguf: cannot create the GGUF file: No such file or directory"
check dot-no-folder 2 "$profile" -c "$configs/default.json" --dry-run --dot "$tmp/no-folder/g.dot"
says dot-no-folder "$tmp/no-folder/g.dot: cannot create the DOT file (--dot): No such file or directory"
check weights-no-folder 2 "$run" -c "$configs/default.json" -r 1 --save-weights "$tmp/no-folder/w.gguf"
says weights-no-folder "$tmp/no-folder/w.gguf: cannot create the GGUF file: No such file or directory"
: >"$tmp/a-file"
check npy-out-not-a-folder 2 "$run" -c "$configs/default.json" -r 1 --save-outputs "$tmp/a-file/outs"
says npy-out-not-a-folder "$tmp/a-file/outs: cannot create the directory: Not a directory"
# Permissions hold only for a user other than root.
if [ "$(id -u)" -ne 0 ]; then
  echo '{}' >"$tmp/locked.json"
  chmod 000 "$tmp/locked.json"
  check config-permission 2 "$run" -c "$tmp/locked.json"
  says config-permission "$tmp/locked.json: cannot open the config file: Permission denied"
fi

# --- The environment: every variable xbackend reads is checked before anything else, in every tool.
for tool in "$run" "$profile" "$compare" "$opcheck"; do
  name=$(basename "$tool")
  for value in 16 -1 abc; do
    XB_SIM_DEVICES=$value check "env-sim-$value-$name" 2 "$tool" --list-devices
    says "env-sim-$value-$name" "$name: XB_SIM_DEVICES=$value: "
    expect_in "env-sim-$value-$name" "$tmp/err" "(0 to 15; unset: 2)"
  done
done
XB_CPU_ISA=avx3 check env-isa 2 "$run" --list-devices
says env-isa "graph-run: XB_CPU_ISA=avx3: not a kernel set (scalar, avx2 or avx512; unset: the best the CPU runs)"
XB_SCHED_DEBUG=yes check env-sched-debug 2 "$profile" --dry-run
says env-sched-debug "sched-profile: XB_SCHED_DEBUG=yes: not an integer (0 to 2; unset: 0)"
XB_SIM_DEVICES=4 check env-sim-4 0 "$run" --list-devices
expect_in env-sim-4 "$tmp/out" "^SIM3 "
if [ -n "$bench" ]; then
  XB_SIM_DEVICES=x check env-bench 2 "$bench" --benchmark_list_tests
  says env-bench "graph-bench: XB_SIM_DEVICES=x: not an integer"
fi

# --- Names as long as a file or a command line can make them, and with control characters: one
# line of at most 1,000 characters, the name cut with "...", the reason kept at the end.
long=$("$python" -c "print('D' * 100000)")
short() {  # short NAME: the last command's stderr is at most 1,000 characters and its newline
  local n
  n=$(wc -c <"$tmp/err")
  [ "$n" -le 1001 ] || { echo "FAIL $1: $n characters on stderr"; failures=$((failures + 1)); }
}
check long-device 2 "$run" -b "$long" -r 1
says long-device "default.json: --backends: device 'DDDDDDDD"
expect_in long-device "$tmp/err" "DDD...' is not present"
expect_in long-device "$tmp/err" "--map DDD*\.\.\.=SIM0"
short long-device
check long-param 2 "$compare" -P "SIM0:$long=1"
says long-param "characters left out"
short long-param
check long-threads 2 "$run" -t "$long"
says long-threads "is not a number"
short long-threads
check newline-device 2 "$profile" --dry-run -b "$(printf 'SIM0\nCPU: all good\033[2J')"
says newline-device "device 'SIM0\\\\nCPU: all good\\\\x1b.2J' is not present"

finish "graph-run, sched-profile, backend-compare, op-check${bench:+, graph-bench} messages"
