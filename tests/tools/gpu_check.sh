#!/usr/bin/env bash
# scripts/gpu-check rehearsed without a GPU, against the build under test (--skip-build): the whole-run
# deadline leaves steps out and says so, the out folder (as a GPU lease's $OUT) holds the summary,
# the progress lines and the logs however the run ends, a SIGTERM stops the running step and still
# writes everything, and with a fake nvidia-smi the preflight and the device's name come through.
# Usage: gpu_check.sh BUILD_DIR SOURCE_DIR
set -u
build=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$0")/check_lib.sh"
gpu_check() { bash "$src/scripts/gpu-check" --skip-build --build-dir "$build" "$@"; }

# A deadline of 8 s: a step starts only with 5 s left, so the first compare steps run (each takes
# half a second or more) and the rest are recorded as not started; everything is in the out folder at the end.
t0=$SECONDS
check deadline 1 gpu_check --host-only --only compare --deadline 8 --work "$tmp/w1" --out "$tmp/o1"
[ $((SECONDS - t0)) -le 25 ] || { echo "FAIL deadline: the run took $((SECONDS - t0)) s"; failures=$((failures + 1)); }
expect_in deadline-verdict "$tmp/err" "not started; summary in"
py "
import json, tarfile, os, glob
n_configs = len([f for f in glob.glob('$src/configs/*.json') if not f.endswith('schema.json')])
o = '$tmp/o1'
assert sorted(os.listdir(o)) == ['gpu-check-logs.tar.gz', 'progress.txt', 'summary.json'], os.listdir(o)
s = json.load(open(o + '/summary.json'))
t = s['timing']
assert t['finished'] and t['end'] == 'the deadline' and t['deadline_s'] == 8 and t['total_s'] <= 20, t
status = {x['step']: x['status'] for x in t['steps']}
assert len(status) == n_configs and all(k.startswith('compare:') for k in status), status
assert status['compare:all-ops'] in ('passed', 'cut by the deadline'), status
started = [k for k, v in status.items() if v != 'not-started']
assert 1 <= len(started) < n_configs and s['not_started'] == [k for k in status if k not in started], s['not_started']
assert s['ok'] is False and s['device']['name'] == 'SIM0'
assert s['commit']['commit'] and s['commit']['tool_version'].startswith('backend-compare (xbackend) ')
assert s['backend_compare']['all-ops']['status'] == status['compare:all-ops']
names = tarfile.open(o + '/gpu-check-logs.tar.gz').getnames()
assert 'w1/compare-all-ops.log' in names and 'w1/steps.tsv' in names and 'w1/summary.json' in names, names
assert not any(n.endswith('/compare-' + k.split(':')[1] + '.log') for k in s['not_started'] for n in names), names
progress = open(o + '/progress.txt').read()
assert progress.startswith('gpu-check finished (the deadline)') and 'not-started' in progress, progress
" "deadline out folder"

# A fake driver for the runs below: the preflight passes and the device's model names the summary.
mkdir -p "$tmp/bin" "$tmp/r3"
cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
  -L) echo "GPU 0: Fake GPU 9000 (UUID: GPU-0)" ;;
  *--query-gpu*) echo "Fake GPU 9000, 999.99, 81559 MiB, 9.0" ;;
  *) echo "| NVIDIA-SMI 999.99    Driver Version: 999.99    CUDA Version: 99.0 |" ;;
esac
EOF
chmod +x "$tmp/bin/nvidia-smi"

# SIGTERM while a step runs (a compute-sanitizer that sleeps, so the step is surely running): the
# step is recorded as interrupted, the rest as not started, exit 143. The script itself goes in the
# background, not a function: a subshell would take the signal instead.
printf '#!/bin/sh\nexec sleep 60\n' >"$tmp/bin/compute-sanitizer"
chmod +x "$tmp/bin/compute-sanitizer"
PATH="$tmp/bin:$PATH" bash "$src/scripts/gpu-check" --skip-build --build-dir "$build" -d SIM0 --only memcheck,racecheck \
  --deadline 120 --work "$tmp/w2" --out "$tmp/o2" --results "$tmp/r2" >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 300); do grep -q 'now running' "$tmp/o2/progress.txt" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || { echo "FAIL sigterm: exit $rc, expected 143"; cat "$tmp/err"; failures=$((failures + 1)); }
py "
import json
s = json.load(open('$tmp/o2/summary.json'))
t = s['timing']
assert t['finished'] and t['end'] == 'interrupted by SIGTERM' and t['total_s'] < 30, t
status = {x['step']: x['status'] for x in t['steps']}
assert status == {'preflight': 'passed', 'sanitize-memcheck': 'interrupted', 'sanitize-racecheck': 'not-started'}, status
assert s['interrupted'] == ['sanitize-memcheck'] and s['ok'] is False
assert 'sanitize-memcheck' in open('$tmp/o2/progress.txt').read()
" "sigterm summary"

# With it the steps run on SIM0 (registered as the device), and the summary goes to --results.
PATH="$tmp/bin:$PATH" check fake-device 1 gpu_check -d SIM0 --only compare --deadline 6 --work "$tmp/w3" \
  --out "$tmp/o3" --results "$tmp/r3"
py "
import json, os
s = json.load(open('$tmp/r3/gpu-fake-gpu-9000.json'))
assert s['preflight'] == {'ok': True, 'detail': 'SIM0 registered'}, s.get('preflight')
assert s['device']['model'] == 'Fake GPU 9000' and s['device']['nvidia_smi']['compute_cap'] == '9.0', s['device']
assert s['results_file'] == 'results/gpu-fake-gpu-9000.json'
assert json.load(open('$tmp/o3/summary.json')) == s
" "fake device summary"

# memcheck runs its case groups in one process each, all of them even when one finds errors (a
# fake sanitizer that reports an error for the attention group and runs op-check for the others).
cat >"$tmp/bin/compute-sanitizer" <<'EOF'
#!/bin/sh
case "$*" in *flash_attn*) echo "========= ERROR SUMMARY: 1 error"; exit 99 ;; esac
shift 4
exec "$@"
EOF
PATH="$tmp/bin:$PATH" check memcheck-groups 1 gpu_check -d SIM0 --only memcheck --deadline 100 --work "$tmp/w6" \
  --out "$tmp/o6" --results "$tmp/r6"
py "
import json
log = open('$tmp/w6/sanitize-memcheck.log').read()
assert log.count('=== memcheck group: ') == 5 and log.count('ERROR SUMMARY') == 1, log[-2000:]
assert log.count('against CPU: ') == 4 and log.count(' passed, 0 failed') == 4, log[-2000:]
s = json.load(open('$tmp/o6/summary.json'))
assert s['failed_steps'] == ['sanitize-memcheck'] and s['compute_sanitizer']['memcheck']['exit'] == '99', s['compute_sanitizer']
" "memcheck groups"

# ctest-gpu runs the GPU's tests in GoogleTest shards, one report each, and the summary counts them
# by their full names. Without a GPU, XB_REQUIRE_GPU=1 turns the skip of GpuRequired into a failure.
PATH="$tmp/bin:$PATH" check fake-ctest-gpu 1 gpu_check -d SIM0 --only ctest --deadline 100 --work "$tmp/w5" \
  --out "$tmp/o5" --results "$tmp/r5"
py "
import json, glob
s = json.load(open('$tmp/o5/summary.json'))
c = s['ctest_gpu']
assert len(glob.glob('$tmp/w5/ctest-gpu/shard-*.xml')) == 8, glob.glob('$tmp/w5/ctest-gpu/*')
assert c['passed'] > 0 and 'GpuRequired.CudaDeviceIsRegistered' in c['failed_tests'], c
assert c['status'] == 'failed' and s['failed_steps'] == ['ctest-gpu'], (c, s['failed_steps'])
" "ctest-gpu shards"

# --carry: a build made on another machine (scripts/gpu-carry build), here the build under test packed
# the same way. It is unpacked into the build folder, the steps run from it and name its commit, a
# second call on the same machine (the carry left behind) reuses it, --rest plans only what the first
# call did not finish, and a carried program whose library is missing stops the run at the preflight.
stage=$tmp/carry-stage
mkdir -p "$stage/apps" "$stage/tests" "$stage/ggml/bin" "$tmp/carry" "$tmp/lib"
cp "$build/apps/backend-compare" "$build/apps/op-check" "$stage/apps/"
printf '#!/bin/sh\nexit 0\n' >"$stage/tests/xb-tests" && chmod +x "$stage/tests/xb-tests"
printf 'commit=0123456789abcdef0123456789abcdef01234567\ndirty=false\n' >"$stage/xb-commit.txt"
tar -C "$stage" -cf - . | xz -0 -T0 >"$tmp/carry/build.tar.xz"
check carry 0 bash "$src/scripts/gpu-check" --carry "$tmp/carry" --host-only --build-dir "$tmp/b7" --only opcheck \
  --deadline 100 --work "$tmp/w7" --out "$tmp/o7"
py "
import json
s = json.load(open('$tmp/o7/summary.json'))
status = {x['step']: x['status'] for x in s['timing']['steps']}
assert status == {'unpack': 'passed', 'opcheck-test': 'passed'}, status
assert s['commit']['commit'].startswith('0123456789ab'), s['commit']
" "carry unpacked and run"
mv "$tmp/carry/build.tar.xz" "$tmp/carry-moved.tar.xz"
check carry-again 0 bash "$src/scripts/gpu-check" --carry "$tmp/carry" --host-only --build-dir "$tmp/b7" --only opcheck \
  --deadline 100 --work "$tmp/w7" --out "$tmp/o8"
py "
import json
status = {x['step']: x['status'] for x in json.load(open('$tmp/o8/summary.json'))['timing']['steps']}
assert status == {'unpack': 'skipped', 'opcheck-test': 'passed'}, status
" "carry reused"
check carry-rest 0 bash "$src/scripts/gpu-check" --carry "$tmp/carry" --host-only --build-dir "$tmp/b7" \
  --only opcheck,compare --rest --work "$tmp/w7" --plan
py "
lines = [l.split()[0] for l in open('$tmp/out').read().splitlines()[1:-1]]
assert lines[0] == 'unpack' and 'opcheck-test' not in lines and all(l.startswith('compare:') for l in lines[1:]), lines
" "rest plans what is left"
mv "$tmp/carry-moved.tar.xz" "$tmp/carry/build.tar.xz"
echo 'int xb_missing_symbol(void) { return 1; }' | cc -shared -fPIC -x c - -o "$tmp/lib/libxbmissing.so"
echo 'int xb_missing_symbol(void); int main(void) { return xb_missing_symbol(); }' |
  cc -x c - -o "$stage/ggml/bin/needs-missing" -L"$tmp/lib" -lxbmissing
tar -C "$stage" -cf - . | xz -0 -T0 >"$tmp/carry/build.tar.xz"
check carry-missing-library 3 bash "$src/scripts/gpu-check" --carry "$tmp/carry" --host-only --build-dir "$tmp/b9" \
  --only opcheck --deadline 100 --work "$tmp/w9" --out "$tmp/o9"
expect_in carry-missing-line "$tmp/err" "gpu-check: preflight: the carried programs cannot find: needs-missing: libxbmissing.so"

# The lease's plan with a carried build: ggml's side by side right after the op-check test, and the
# plan's arithmetic (checks and timings against the deadline; building and unpacking apart).
check carry-plan 0 bash "$src/scripts/gpu-check" --carry "$tmp/carry" --plan --deadline 580
py "
lines = open('$tmp/out').read().splitlines()
steps = [l.split()[0] for l in lines[1:-1]]
assert steps[:4] == ['unpack', 'opcheck-test', 'ggml-ops', 'ggml-model'], steps[:6]
assert steps.index('ggml-model') < steps.index('ctest-gpu') < steps.index('sanitize-memcheck'), steps
assert 'build' not in steps and 'ggml-build' not in steps, steps
assert lines[-1].startswith('checks and timings: ') and lines[-1].endswith('(building and unpacking: 15 s)'), lines[-1]
" "carry plan"

# scripts/gpu-lease: gpu-check in its own session, followed by one command and then another; each
# returns what there is so far in its out folder, the first with 124 while the run goes on, the
# last with gpu-check's own exit (1 here: the deadline left steps out).
lease() { XB_GPU_LEASE_DIR="$tmp/lease" bash "$src/scripts/gpu-lease" "$@"; }
check lease-start 124 lease start --follow 1 --out "$tmp/lo1" --host-only --skip-build --build-dir "$build" --only compare \
  --deadline 8 --work "$tmp/lw"
expect_in lease-start-line "$tmp/err" "gpu-lease: gpu-check still runs"
[ -f "$tmp/lo1/progress.txt" ] || { echo "FAIL lease-start-progress: no progress.txt in the first command's out folder"; failures=$((failures + 1)); }
check lease-follow 1 lease follow --follow 60 --out "$tmp/lo2"
py "
import json, os
s = json.load(open('$tmp/lo2/summary.json'))
assert s['timing']['finished'] and s['timing']['end'] == 'the deadline', s['timing']
assert 'gpu-lease.log' in os.listdir('$tmp/lo2')
" "lease follow summary"
check lease-none 2 env XB_GPU_LEASE_DIR="$tmp/no-lease" bash "$src/scripts/gpu-lease" follow --out "$tmp/lo3"

# A driver that fails: exit 3 with the preflight's one line, and the summary says why.
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver."\nexit 9\n' \
  >"$tmp/bin/nvidia-smi"
PATH="$tmp/bin:$PATH" check no-driver 3 gpu_check --only compare --work "$tmp/w4" --out "$tmp/o4" --results "$tmp/r4"
expect_in no-driver-line "$tmp/err" "gpu-check: preflight: no GPU: nvidia-smi failed: NVIDIA-SMI has failed"
py "
import json, glob
n_configs = len([f for f in glob.glob('$src/configs/*.json') if not f.endswith('schema.json')])
s = json.load(open('$tmp/o4/summary.json'))
assert s['preflight']['ok'] is False and 'nvidia-smi failed' in s['preflight']['detail'], s['preflight']
assert s['failed_steps'] == ['preflight'] and len(s['not_started']) == n_configs, s
" "no-driver summary"

# cpu-stream's figures (graph-bench's BM_QuantMatVecVsMemcpy report, here a made-up one): each type's
# rate and ratios to memcpy, and the types whose median ratio is above issue 36's 1.25.
py "
import sys
sys.path.insert(0, '$src/scripts')
import gpu_check_summary as g
def bench(t, gbs, x, best):
    return {'name': 'BM_QuantMatVecVsMemcpy/%s/M:4096/K:4096/iterations:7/manual_time' % t,
            'bytes_per_second': gbs * 1e9, 'x_memcpy': x, 'x_memcpy_best': best}
r = g.stream_figures({'context': {'num_cpus': 16}, 'benchmarks': [
    bench('q4_K', 40.0, 0.31, 0.29), bench('iq1_s', 9.5, 1.31, 1.2), bench('iq1_m', 8.0, 1.2504, 1.2),
    {'name': 'BM_QuantMatVecVsMemcpy/iq2_xs/M:4096/K:4096', 'error_occurred': True},
    {'name': 'BM_Memcpy/1073741824', 'bytes_per_second': 1e10}]})
assert r['cpus'] == 16 and r['target'] == 1.25, r
assert r['types'] == {'q4_K': {'GB_per_s': 40.0, 'x_memcpy': 0.31, 'x_memcpy_best': 0.29},
                      'iq1_s': {'GB_per_s': 9.5, 'x_memcpy': 1.31, 'x_memcpy_best': 1.2},
                      'iq1_m': {'GB_per_s': 8.0, 'x_memcpy': 1.25, 'x_memcpy_best': 1.2}}, r['types']
assert r['above_target'] == ['iq1_m', 'iq1_s'], r  # 1.2504 is above 1.25, though shown rounded
assert g.stream_figures({'benchmarks': []}) is None and g.stream_figures(None) is None
" "cpu-stream figures"

# bench's figures against memcpy and cuBLAS are judged on the unrounded ratios: 0.599 of memcpy is
# below 0.6 and 0.897 of cuBLAS below 0.9, though both show rounded up.
py "
import sys
sys.path.insert(0, '$src/scripts')
import gpu_check_summary as g
bw = g.bandwidth_figures([{'name': 'BM_CudaMemcpyD2D/268435456', 'bytes_per_second': 1000.0},
                          {'name': 'BM_CudaOp/silu/f32/real_time', 'bytes_per_second': 599.0},
                          {'name': 'BM_CudaOp/add/f32/real_time', 'bytes_per_second': 700.0}])
assert bw['kernels']['silu/f32']['of_memcpy'] == 0.6 and bw['below_target'] == ['silu/f32'], bw
mm = g.gemm_figures([{'name': 'BM_CudaMulMat/f16/M:4096/real_time', 'real_time': 100.0},
                     {'name': 'BM_CublasGemm/f16/M:4096/real_time', 'real_time': 89.7}])
assert mm['shapes']['f16/M:4096']['of_cublas'] == 0.9 and mm['below_target'] == ['f16/M:4096'], mm
" "bench figures judged unrounded"

# The side by side against ggml-cuda judged on unrounded figures: an op at 0.899x ggml's speed and a
# model test at 0.999x llama-bench's miss their targets, a decode at 0.799 of memcpy misses its
# own; the decode without graph replay is not judged.
py "
import sys
sys.path.insert(0, '$src/scripts')
import gpu_check_summary as g
ops = {'cases': [{'case': 'a', 'vs_ggml': 0.8994}, {'case': 'b', 'vs_ggml': 1.2}, {'case': 'c'}]}
model = {'rows': [{'model': 'm', 'test': 'pp512', 'ratio': 0.9994},
                  {'model': 'm', 'test': 'tg128@d0', 'ratio': 1.3, 'of_read_bandwidth': 0.7994},
                  {'model': 'm', 'test': 'tg128@d0 (graphs=0)', 'ratio': None, 'of_read_bandwidth': 0.1}]}
t = g.vs_ggml_targets(ops, model)
assert t['ops_judged'] == 2 and t['ops_below'] == ['a'], t
assert t['model_tests_judged'] == 2 and t['model_tests_below'] == ['m pp512'], t
assert t['decodes_below'] == ['m tg128@d0'], t
assert g.vs_ggml_targets(None, None) == {'op_target': 0.9, 'model_target': 1.0, 'decode_target': 0.8}
" "vs ggml targets judged unrounded"

# ggml-build's status file, which gpu-check waits for, is written however the build ends: here a
# source without CMakeLists.txt, whose configure step fails with 2.
check ggml-build-status 2 bash "$src/scripts/ggml-build" build "$tmp/no-source" "$tmp/ggml-build"
py "assert open('$tmp/ggml-build/xb-ggml-build.status').read().strip() == '2'" "ggml-build status file"

finish gpu-check
