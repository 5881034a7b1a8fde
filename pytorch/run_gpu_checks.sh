#!/usr/bin/env bash
# One command for a GPU machine with PyTorch and nvcc: installs the package from this checkout, then
# runs its pytest suite (tests/) with a summary, and optionally the benchmarks.
#
#   pytorch/run_gpu_checks.sh                   # install + pytest tests/ (-rs lists every skip and its reason;
#                                               # a worker per core where pytest-xdist is installed)
#   pytorch/run_gpu_checks.sh --bench           # ... then bench/bench.py (4096 x 393216), bench_host.py
#                                               # (host time per call), bench_models.py (real networks),
#                                               # bench_fused.py, bench_fused_models.py (fused ops, rewrite)
#   pytorch/run_gpu_checks.sh --no-install
#   pytorch/run_gpu_checks.sh -- -k fused -x    # arguments after -- go to pytest
#
# Environment: PYTHON (default python3), LOG_DIR (default a new temporary folder; pytest's output,
# junit.xml and each benchmark's output land there), TORCH_CUDA_ARCH_LIST (default 9.0, read by
# setup.py), MAX_JOBS.
# Exit status: 0 every step passed, 1 otherwise (pytest finding no test is a failure too).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hardact-torch.XXXXXX")}
mkdir -p "$logs" && logs=$(cd "$logs" && pwd)  # absolute: the tests run from inside it
install=1 bench=0
pytest_args=()
while (($#)); do
  case $1 in
    --bench) bench=1 ;;
    --no-install) install=0 ;;
    --) shift; pytest_args=("$@"); break ;;
    *) echo "usage: $0 [--bench] [--no-install] [-- PYTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done

summary=()
status=0
step() {  # step NAME COMMAND...: runs the command, keeps its log, records its last line
  local name=$1 start=$SECONDS
  shift
  if "$@" >"$logs/$name.log" 2>&1; then
    summary+=("PASS $name ($((SECONDS - start)) s): $(tail -n 1 "$logs/$name.log")")
  else
    summary+=("FAIL $name ($((SECONDS - start)) s): $(tail -n 1 "$logs/$name.log")")
    status=1
    grep -E "FAIL|Error" "$logs/$name.log" | head -n 20
  fi
  echo "${summary[-1]}"
}

"$python" -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")'
if [[ $install == 1 ]]; then
  step install env MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$python" -m pip install --no-build-isolation "$here"
  if grep -q externally-managed-environment "$logs/install.log"; then
    echo "  this Python refuses pip installs (PEP 668): use a venv, or rerun with PIP_BREAK_SYSTEM_PACKAGES=1"
  fi
  if [[ $status != 0 ]]; then  # the tests would test a stale installation
    echo "run_gpu_checks: FAILED (install; log: $logs/install.log)"
    tail -n 30 "$logs/install.log"
    exit 1
  fi
fi
# From the log folder, so that the installed package is imported, never the source tree; pytest
# reads this folder's configuration. Exit status 5 (no test collected) fails like any other.
cd "$logs" || exit 1
# With pytest-xdist installed, a worker per core (conftest gives each its share of PyTorch's CPU
# threads); -n 0 after -- runs the suite in one process.
parallel=()
"$python" -c 'import xdist' 2>/dev/null && parallel=(-n "$(nproc)")
start=$SECONDS
"$python" -m pytest -c "$here/pyproject.toml" --rootdir "$here" -p no:cacheprovider -rs ${parallel[@]+"${parallel[@]}"} \
  --junitxml "$logs/junit.xml" "$here/tests" ${pytest_args[@]+"${pytest_args[@]}"} >"$logs/pytest.log" 2>&1
pytest_status=$?
sed -n '/short test summary info/,$p' "$logs/pytest.log"
last=$(tail -n 1 "$logs/pytest.log")
if [[ $pytest_status == 0 ]]; then
  summary+=("PASS pytest ($((SECONDS - start)) s): $last")
else
  summary+=("FAIL pytest ($((SECONDS - start)) s, exit $pytest_status): $last")
  status=1
fi
summary+=("     $(grep '^comparisons:' "$logs/pytest.log" || echo 'comparisons: none recorded')")
echo "${summary[-2]}"
if [[ $bench == 1 ]]; then
  for script in bench bench_host bench_models bench_fused bench_fused_models; do
    step "$script" "$python" "$here/bench/$script.py"
    cat "$logs/$script.log"
  done
fi

echo
echo "summary (logs in $logs):"
printf '  %s\n' "${summary[@]}"
echo "run_gpu_checks: $([[ $status == 0 ]] && echo PASSED || echo FAILED)"
exit $status
