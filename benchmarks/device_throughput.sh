#!/usr/bin/env bash
# Throughput rows on a lent GPU (the `device` tool), in one call.
#
# Here, once per session, from the project's root (PYTHON: an interpreter with dm-control):
#   PYTHON=.venv/bin/python bash benchmarks/device_throughput.sh prepare
# puts mujoco, mujoco-mjx, dm-env and lxml wheels into .whl/, and dm_control's dog meshes (7 MB
# compressed; the GPU image has no dm-control) and its suite (5 MB) into .lease/, both
# ignored by git (54 MB in all; a device run carries at most 64 MB). Then one
# device run, with carry [".whl", ".lease"]:
#   JOBS=benchmarks/throughput_jobs_gpu_large.txt WORKERS=3 LIMIT=480 \
#     bash benchmarks/device_throughput.sh
# LIMIT (seconds) stops the jobs; the rows measured by then land in $OUT/throughput.csv and
# every job's log in $OUT/logs.tar.gz. Set XLA_FLAGS to measure compiler settings. STEPS
# (default 50) is the steps per timed call: a job times 8 calls, one job at a time, so for
# the slowest models (humanoid_CMU: 787 env steps/s at batch 256) use STEPS=5.
#   bash benchmarks/device_throughput.sh probe --task stacker-stack_2 ... \
#     --log-dir $OUT/probe --vmodule hlo_pass_pipeline=1
# runs benchmarks/gpu_compile_probe.py with those arguments instead (after the same setup),
# its rows into $OUT/probe.csv and any logs under $OUT gzipped.
#   LIMIT=480 bash benchmarks/device_throughput.sh parity humanoid_CMU-walk --pieces soak \
#     --parts shard0,shard1
# runs `python -m jaxcontrol parity` with those arguments (deterministic GPU ops), stopped
# after LIMIT seconds, and returns parity_records/ (saved parts in its progress/) under $OUT.
# Parts saved there carry the GPU's jax version, so they resume only on the GPU machine.
set -uo pipefail
if [ "${1:-}" = prepare ]; then
  bash ../shared/device/fetch-wheels.sh dm-env dm-tree wrapt attrs lxml || exit
  grep -qxF '/.lease/' .git/info/exclude || echo '/.lease/' >> .git/info/exclude
  mkdir -p .lease
  site=$("${PYTHON:-python3}" -c 'import dm_control, pathlib; print(pathlib.Path(dm_control.__file__).parents[1])') || exit
  tar -C "$site" -cJf .lease/dog_assets.tar.xz dm_control/suite/dog_assets || exit
  # dm_control's suite, the reference that `parity` compares with (returns), without the
  # packages the suite does not import and without the dog's meshes (above): 5 MB packed.
  tar -C "$site" -cJf .lease/dm_control_suite.tar.xz --exclude=__pycache__ --exclude='*_test.py' \
    --exclude=dm_control/suite/dog_assets dm_control/__init__.py dm_control/_render \
    dm_control/mujoco dm_control/rl dm_control/suite dm_control/utils && du -sh .whl .lease
  exit
fi
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 2
# dog's meshes (mjcf.dog.asset_dir finds them in the dm_control folder on the path) and,
# where prepare packed it, dm_control's suite.
mkdir -p /tmp/dmc && tar -C /tmp/dmc -xJf .lease/dog_assets.tar.xz || exit 2
if [ -f .lease/dm_control_suite.tar.xz ]; then tar -C /tmp/dmc -xJf .lease/dm_control_suite.tar.xz; fi
export PYTHONPATH=/tmp/site:/tmp/dmc:$PWD MUJOCO_GL=disable PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 - <<'PY' || exit 3
import jax
import jaxcontrol

assert jax.default_backend() == "gpu", jax.devices()
jaxcontrol.load("dog", "stand")
print("jax", jax.__version__, jax.devices(), "- the dog model loads")
try:
    from dm_control import suite

    suite.load("humanoid_CMU", "walk").reset()
    print("dm_control's suite loads (parity's returns can run here)")
except Exception as error:  # the soak and the throughput need no dm_control
    print(f"no dm_control here ({error!r}): parity's returns cannot run")
PY
echo "setup took $((SECONDS - t0)) s"
if [ "${1:-}" = parity ]; then
  shift
  # The soak's replay must be bit-identical: XLA's GPU scatter-adds are not, unless told.
  det=--xla_gpu_deterministic_ops=true
  if XLA_FLAGS="$det" python3 -c 'import jax; jax.devices()' 2>/dev/null; then
    export XLA_FLAGS="${XLA_FLAGS:-} $det"
  else
    echo "this XLA does not know $det: the soak's replay may differ" >&2
  fi
  timeout "${LIMIT:-480}" python3 -m jaxcontrol parity "$@"
  echo "parity exited $? after $((SECONDS - t0)) s"
  cp -r parity_records "$OUT/"
  exit
fi
if [ "${1:-}" = probe ]; then
  shift
  # Probes may run side by side (--jobs): none may take most of the GPU's memory.
  XLA_PYTHON_CLIENT_PREALLOCATE=false python3 benchmarks/gpu_compile_probe.py "$@" \
    --csv "$OUT/probe.csv"
  find "$OUT" -name '*.log' -exec gzip -9 {} +
  echo "done after $((SECONDS - t0)) s"
  exit
fi
SECONDS_LIMIT=${LIMIT:-480} PYTHON=python3 bash benchmarks/throughput_parallel.sh \
  "${JOBS:-benchmarks/throughput_jobs_gpu_large.txt}" /tmp/tp/throughput.csv "${WORKERS:-3}" \
  --steps "${STEPS:-50}" --env-steps 51200 --seconds 0.3 --repeats 2 --dm-steps 0
cp /tmp/tp/throughput.csv "$OUT/"
tar -C /tmp/tp -czf "$OUT/logs.tar.gz" throughput.csv.d
echo "done after $((SECONDS - t0)) s"
