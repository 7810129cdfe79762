#!/usr/bin/env bash
# The GPU check in one command on a CUDA machine, within about eight minutes (three on an H200):
#   1. what the machine has (nvidia-smi, driver, CUDA runtime, CuPy and its wheel, NVRTC);
#   2. bench/gpu_check.py: every template tuned, measured again and held against the simulator,
#      sessions in OUT/sessions/ and the table in OUT/gpu-results.md (GPU_CHECK_SECONDS, default 300);
#   3. every test marked `gpu` (GPU_TESTS_SECONDS, default 150);
#   4. with GPU_SWEEP="template ...", every valid config of those templates (see below).
# Each step has its own time limit and its own log in OUT, so a step that fails or hangs leaves the
# others' results. Exit status: the first failing step's, else 0.
#
#   bash scripts/gpu_check.sh [OUT]          # OUT defaults to a new folder under /tmp
#   PYTHON=.venv/bin/python bash scripts/gpu_check.sh results/
#
# Run it after `bash scripts/install.sh --cuda` (or with a Python that has CuPy and this project's
# dependencies on its path). It writes nowhere but OUT and the compiler cache.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d /tmp/gpu-check.XXXXXX)}
py=${PYTHON:-python3}
mkdir -p "$out/sessions" || exit 2
out=$(cd "$out" && pwd)
cd "$here" || exit 2
export PYTHONUNBUFFERED=1
status=0
note() { echo "== $* ($(date -u +%H:%M:%S))"; }

note "machine" | tee "$out/versions.txt"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
        --format=csv 2>&1 || echo "nvidia-smi: not usable"
    "$py" - <<'EOF'
import importlib.metadata as md
import platform
print("python", platform.python_version())
for name in ("cupy-cuda13x", "cupy-cuda12x", "cuda-bindings", "cuda-pathfinder", "nvidia-cuda-nvrtc",
             "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-runtime", "nvidia-cuda-runtime-cu12", "nvidia-ml-py",
             "numpy", "scipy", "optuna"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        pass
from workbench.backends.cuda_env import probe
print("cuda environment:", probe().summary())
EOF
} 2>&1 | tee -a "$out/versions.txt"

note "bench/gpu_check.py" | tee "$out/gpu-check.log"
set -o pipefail
timeout -k 10 $((${GPU_CHECK_SECONDS:-300} + 60)) "$py" bench/gpu_check.py --out "$out/sessions" \
    --report "$out/gpu-results.md" --time-limit "${GPU_CHECK_SECONDS:-300}" ${GPU_CHECK_ARGS:-} 2>&1 \
    | tee -a "$out/gpu-check.log"
step=$?
[ $status -eq 0 ] && status=$step

note "tests marked gpu" | tee "$out/gpu-tests.log"
mapfile -t files < <(grep -l "pytest.mark.gpu" tests/*.py tests/*/*.py 2>/dev/null)
if [ ${#files[@]} -eq 0 ]; then
    echo "no test file is marked gpu" | tee -a "$out/gpu-tests.log"
else
    timeout -k 10 "${GPU_TESTS_SECONDS:-150}" "$py" -m pytest -m gpu -p no:cacheprovider -q --timeout 120 \
        "${files[@]}" 2>&1 | tee -a "$out/gpu-tests.log"
    step=$?
    [ $status -eq 0 ] && status=$step
fi

# 4. Optional: every valid config of the templates named in GPU_SWEEP (e.g. "vector_add transpose"),
#    GPU_SWEEP_SECONDS each (default 180): real landscapes of our own templates, for the strategy
#    benchmark (bench/strategies.py reads resources/sessions/*.json of 400 configs or more) and for
#    holding the simulator against every config (bench/sim_calibration.py takes a session too).
if [ -n "${GPU_SWEEP:-}" ]; then
    mkdir -p "$out/sweeps"
    for template in $GPU_SWEEP; do
        note "sweep $template" | tee -a "$out/gpu-sweeps.log"
        timeout -k 10 $((${GPU_SWEEP_SECONDS:-180} + 60)) "$py" main.py tune "$template" --backend cuda \
            --strategy grid --budget 1000000 --time-limit "${GPU_SWEEP_SECONDS:-180}" \
            --out "$out/sweeps/$template.json" 2>&1 | tail -n 5 | tee -a "$out/gpu-sweeps.log"
        step=$?
        [ $status -eq 0 ] && status=$step
    done
fi

note "done, status $status" | tee -a "$out/versions.txt"
exit $status
