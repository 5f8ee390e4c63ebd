#!/usr/bin/env bash
# Runs benchmarks/throughput.py over many tasks at once on one accelerator: WORKERS processes
# trace and compile side by side on the host's cores, and take turns for the timed runs
# (throughput.py --lock), so that no timing shares the device. Compiling is most of the cost
# on a GPU (10-60 s per task and batch size), timing a second or two. The workers run under
# `nice`; the one timing returns to niceness 0 where it may (root), so that compiles do not
# slow its kernel launches.
#
# Usage: bash benchmarks/throughput_parallel.sh JOBS OUT_CSV WORKERS [throughput.py options...]
#   JOBS: one job per line, "TASK BATCH [BATCH...]"; jobs start in file order, so list the
#   slowest first. A task may have several lines (one per batch size runs them side by
#   side). OUT_CSV gets every job's rows (also those of jobs stopped part way); per-job
#   CSVs and logs stay in OUT_CSV.d/. Set PYTHON to choose the interpreter, and
#   SECONDS_LIMIT to stop the jobs after that long (the rows measured so far are kept).
set -uo pipefail
jobs_file=$1 out=$2 workers=$3
shift 3
export TP_DIR="$out.d" TP_SCRIPT TP_PYTHON="${PYTHON:-python3}" TP_OPTIONS="$*"
TP_SCRIPT="$(cd "$(dirname "$0")" && pwd)/throughput.py"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # the processes share the device's memory
mkdir -p "$TP_DIR"
# shellcheck disable=SC2016  # expanded by the inner shell
grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$jobs_file" | timeout "${SECONDS_LIMIT:-0}" xargs -P "$workers" -L 1 sh -c '
  task=$0 job=$0
  for batch in "$@"; do job="$job-$batch"; done  # a task may have several lines
  nice -n 10 "$TP_PYTHON" "$TP_SCRIPT" --tasks "$task" --batch-sizes "$@" --lock "$TP_DIR/lock" \
    --csv "$TP_DIR/$job.csv" $TP_OPTIONS >"$TP_DIR/$job.log" 2>&1 \
    || echo "$job: exit $? (see $TP_DIR/$job.log)"
'
"$TP_PYTHON" - "$out" "$TP_DIR" <<'PY'
import glob, os, sys

sys.path.insert(0, os.path.dirname(os.environ["TP_SCRIPT"]))
import throughput

out, folder = sys.argv[1:]
rows = [row for path in sorted(glob.glob(f"{folder}/*.csv")) for row in throughput.read_csv(path)]
throughput.write_csv(out, rows)
print(f"{len(rows)} rows -> {out}")
PY
