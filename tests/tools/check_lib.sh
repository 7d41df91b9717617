# Shared helpers of the tools' end-to-end checks (sourced). Each check prints FAIL and counts a
# failure instead of stopping, so one run lists everything that is wrong; finish exits 1 if any.
failures=0
# The interpreter of the checks' Python: CTest passes Debian's python3 (tests/CMakeLists.txt), which
# has numpy; run by hand, python3 on PATH.
python=${XB_PYTHON3:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME EXPECTED_EXIT COMMAND...  (stdout to $tmp/out, stderr to $tmp/err)
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -ne "$want" ]; then echo "FAIL $name: exit $got, expected $want"; cat "$tmp/err"; failures=$((failures + 1)); fi
}
expect_in() {  # expect_in NAME FILE TEXT
  if ! grep -q -- "$3" "$2"; then echo "FAIL $1: '$3' not in output"; cat "$2"; failures=$((failures + 1)); fi
}
py() {  # py PYTHON_CODE NAME: the code's assertions must hold
  "$python" -c "$1" || { echo "FAIL $2"; failures=$((failures + 1)); }
}
finish() {  # finish TOOL_NAMES
  if [ "$failures" -ne 0 ]; then echo "$failures checks failed"; exit 1; fi
  echo "$1: all checks passed"
}
