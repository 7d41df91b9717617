#!/usr/bin/env bash
# End-to-end checks of op-check as a user runs it: the JSON report of test mode, a fault it must
# catch, support mode with an op switched off, perf numbers, workers, formats and usage errors.
# Usage: op_check.sh BINARY
set -u
bin=$1
source "$(dirname "$0")/check_lib.sh"

# Test mode: every case on SIM0 passes against the CPU, and the report adds up.
check test-sim0 0 "$bin" -b SIM0 --format json -o "$tmp/test.json"
py "
import json; r = json.load(open('$tmp/test.json'))
for k in ('mode', 'reference', 'backends', 'cases', 'checks', 'passed', 'failed', 'unsupported', 'failing', 'results'): assert k in r, k
assert r['mode'] == 'test' and r['backends'] == ['SIM0'] and r['reference'] == 'CPU'
assert r['cases'] > 200 and r['checks'] == r['cases'] == len(r['results'])
assert r['failed'] == 0 and r['failing'] == [] and r['passed'] + r['unsupported'] == r['checks'] and r['passed'] > 200
ops = {x['op'] for x in r['results']}
for op in ('add', 'mul_mat', 'rope', 'soft_max', 'flash_attn_ext', 'get_rows', 'set_rows', 'cpy', 'unary(silu)'): assert op in ops, op
assert all(x['status'] == 'ok' and x['nmse'] <= x['tolerance'] for x in r['results'])" "test-sim0 report"
expect_in test-sim0-summary "$tmp/err" "SIM0 against CPU: .* passed, 0 failed"

# A fault injected on SIM0's first node must fail the cases, listed by name, with exit 1.
check fault 1 "$bin" -b SIM0 -P SIM0:fault_node=0 --op add,mul_mat --format json -o "$tmp/fault.json"
py "
import json; r = json.load(open('$tmp/fault.json'))
names = [f['case'] for f in r['failing']]
assert r['failed'] == len(names) > 0 and r['passed'] + r['failed'] + r['unsupported'] == r['checks']
assert 'add_f32_f32_same' in names and 'mul_mat_67x13x7_f32' in names, names
assert all(f['backend'] == 'SIM0' and f['reason'] for f in r['failing'])" "fault report"
expect_in fault-summary "$tmp/err" "failing cases:"
expect_in fault-named "$tmp/err" "SIM0 add_f32_f32_same"

# The same run on four workers gives the same verdicts, in the same order.
check jobs 1 "$bin" -b SIM0 -P SIM0:fault_node=0 --op add,mul_mat --format json -o "$tmp/jobs.json" -j 4
py "
import json; a, b = (json.load(open('$tmp/' + f)) for f in ('fault.json', 'jobs.json'))
key = lambda r: [(x['case'], x['status'], x['nmse']) for x in r['results']]
assert key(a) == key(b)" "jobs agree"

# Support mode: rope switched off on SIM0 shows as unsupported there, and only there.
check support 0 "$bin" --mode support -P SIM0:unsupported=rope --format json -o "$tmp/support.json"
py "
import json; r = json.load(open('$tmp/support.json'))
assert r['mode'] == 'support' and {'CPU', 'SIM0', 'SIM1'} <= set(r['backends'])
rope = [x for x in r['results'] if x['op'] == 'rope']
assert rope and all(x['SIM0'] == 'no' and x['SIM1'] == 'yes' and x['CPU'] == 'yes' for x in rope), rope
assert all(x['SIM0'] == 'yes' for x in r['results'] if x['op'] != 'rope')" "support rope"
check support-table 0 "$bin" --mode support -b SIM0 -P SIM0:unsupported=rope --op rope
expect_in support-table-no "$tmp/out" "rope .* no"
check test-unsupported 0 "$bin" -b SIM0 -P SIM0:unsupported=rope --op rope --format json -o "$tmp/unsup.json"
py "
import json; r = json.load(open('$tmp/unsup.json'))
assert r['unsupported'] == r['checks'] > 0 and r['failed'] == 0" "test mode skips unsupported"

# Perf mode: positive GFLOP/s for mul_mat, GB/s for a memory-bound op, with runs and time per run.
check perf 0 "$bin" --mode perf -b SIM0 --op mul_mat,add -p 'mul_mat_*_1024x|^add_f32_4096x512$' --perf-time 0.02 --format json -o "$tmp/perf.json"
py "
import json; r = json.load(open('$tmp/perf.json'))
res = r['results']; assert r['mode'] == 'perf' and res
m = r['meta']
assert m['tool'] == 'op-check' and m['commit'] and m['build_type'] and m['cpu_kernels'] in ('scalar', 'avx2', 'avx512'), m
assert m['date'].endswith('Z') and isinstance(m['n_cpus'], int) and isinstance(m['gpus'], list), m
for x in res:
    assert x['supported'] and x['runs'] >= 1 and x['us_per_run'] > 0, x
    # Whole graphs of repeated nodes: runs is a multiple of them, and a fast op (well under the
    # 20 ms a graph should last; a sanitizer build is far slower) is repeated.
    assert 1 <= x['runs_per_graph'] <= 1000 and x['runs'] % x['runs_per_graph'] == 0, x
    assert x['us_per_run'] > 5000 or x['runs_per_graph'] > 1, x
    rate = x['gflops'] if x['op'] == 'mul_mat' else x['gbps']
    assert isinstance(rate, (int, float)) and rate > 0, x
assert any(x['op'] == 'mul_mat' for x in res) and any(x['op'] == 'add' for x in res)" "perf numbers"
check perf-csv 0 "$bin" --mode perf -b SIM0 -p '^add_' --perf-time 0.01 --format csv
expect_in perf-csv-header "$tmp/out" "backend,case,op,type,runs,us_per_run,GB/s,GFLOP/s"

# Listing and usage errors.
check list 0 "$bin" --list-cases --op rope -p neox
expect_in list-case "$tmp/out" "rope_neox_f32"
# In JSON each case describes its output node, sources with their byte strides (a transposed view:
# nb[0] > nb[1]), so that scripts/ggml-side-by-side can rebuild it in ggml.
check list-json 0 "$bin" --mode perf --list-cases -p '^cont_transposed|^scale_f32' --format json -o "$tmp/list.json"
py "
import json, struct; r = {c['case']: c['node'] for c in json.load(open('$tmp/list.json'))}
cont = r['cont_transposed_f32_512x4096']
assert cont['op'] == 'cont' and cont['ne'][:2] == [4096, 512] and cont['type'] == 'f32', cont
src = cont['sources'][0]
assert src['ne'][:2] == [4096, 512] and src['nb'][:2] == [2048, 4], src
scale = r['scale_f32_4096x512']
assert scale['op'] == 'scale' and scale['params_f32'][0] == 0.5 and len(scale['sources']) == 1, scale" "list-cases JSON nodes"
check glob 0 "$bin" --list-cases -p '^mul_mat_*_f32$|^out_prod_f16$' --format json -o "$tmp/glob.json"
py "
import json; names = [x['case'] for x in json.load(open('$tmp/glob.json'))]
assert 'mul_mat_67x13x7_f32' in names and 'out_prod_f16' in names and 'out_prod_bcast23_f16' not in names, names
assert all(n == 'out_prod_f16' or (n.startswith('mul_mat_') and n.endswith('_f32')) for n in names), names" "glob"
check bad-op 2 "$bin" --op nosuchop
expect_in bad-op-msg "$tmp/err" "unknown op"
check bad-pattern 2 "$bin" -p '('
check no-match 2 "$bin" -p 'no_case_has_this_name'
check bad-device 2 "$bin" -b CUDA7
expect_in bad-device-msg "$tmp/err" "available: CPU"
check bad-param 2 "$bin" -P SIM0:nosuchkey=1
check bad-mode 2 "$bin" --mode fast
check help 0 "$bin" --help
expect_in help-example "$tmp/out" "Examples:"

finish "op-check"
