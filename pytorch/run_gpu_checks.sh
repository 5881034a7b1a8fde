#!/usr/bin/env bash
# One command for a GPU machine with PyTorch and nvcc: installs the package from this checkout,
# then runs every one-GPU check and prints a summary.
#
#   examples/pytorch/run_gpu_checks.sh            # install + check_ops, check_fused, check_forward, check_backward
#   examples/pytorch/run_gpu_checks.sh --bench    # ... then bench.py (4096 x 393216), bench_host.py
#                                                 # (host time per call), bench_models.py (real networks),
#                                                 # bench_fused.py, bench_fused_models.py (fused ops, rewrite)
#   examples/pytorch/run_gpu_checks.sh --no-install
#
# Environment: PYTHON (default python3), LOG_DIR (default a new temporary folder; each script's
# full output lands there), TORCH_CUDA_ARCH_LIST (default 9.0, read by setup.py), MAX_JOBS.
# Exit status: 0 every step passed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
logs=${LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hardact-torch.XXXXXX")}
mkdir -p "$logs"
install=1 bench=0
for argument in "$@"; do
  case $argument in
    --bench) bench=1 ;;
    --no-install) install=0 ;;
    *) echo "usage: $0 [--bench] [--no-install]" >&2; exit 2 ;;
  esac
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
  if [[ $status != 0 ]]; then  # the checks would test a stale installation
    echo "run_gpu_checks: FAILED (install; log: $logs/install.log)"
    tail -n 30 "$logs/install.log"
    exit 1
  fi
fi
# From the log folder, so that the installed package is imported, never the source tree.
cd "$logs" || exit 1
for script in check_ops check_fused check_forward check_backward; do
  step "$script" "$python" "$here/$script.py"
done
if [[ $bench == 1 ]]; then
  for script in bench bench_host bench_models bench_fused bench_fused_models; do
    step "$script" "$python" "$here/$script.py"
    cat "$logs/$script.log"
  done
fi

echo
echo "summary (logs in $logs):"
printf '  %s\n' "${summary[@]}"
echo "run_gpu_checks: $([[ $status == 0 ]] && echo PASSED || echo FAILED)"
exit $status
