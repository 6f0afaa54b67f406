#!/bin/sh
# Start or resume the demo model's training in the background (its own session).
# Usage: tools/train/run.sh [--threads N] [--nice N] [--dir BASE] [RUN_NAME] [train.py args...]
#   --threads N  torch/OpenMP/BLAS threads (default 1). Measured on the 2-core machine (v2
#                session, examples/translation/MODEL_CARD.md): 2 threads give well under twice
#                the tokens/s of 1, and take the core the C++ builds need.
#   --nice N     priority of the training's scheduler autogroup (and of the process) against the
#                other sessions' processes (default -5 as root: training first; use 10 when
#                others build on the same cores, so their builds are not starved).
#   --dir BASE   runs live in BASE/RUN_NAME (default /var/cache/tern/train; keep it outside git).
# Checkpoints, snapshots and train.log live in BASE/RUN_NAME/.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
THREADS=1
NICE=${TRAIN_NICE:--5}
BASE=/var/cache/tern/train
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;;
    --dir) BASE=$2; shift 2 ;;
    *) break ;;
  esac
done
RUN=${1:-base}
[ $# -gt 0 ] && shift
DIR=$BASE/$RUN
mkdir -p "$DIR"
if [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
  echo "already running (pid $(cat "$DIR/pid")); log: $DIR/train.log"
  exit 0
fi
# Debian's python3-torch uses the system libblas.so.3; the netlib reference BLAS is ~12x slower
# than OpenBLAS for this model (measured 5.8 vs 70 GFLOPS on one core).
case "$(readlink -f /usr/lib/"$(uname -m)"-linux-gnu/libblas.so.3 2>/dev/null)" in
  *openblas*) ;;
  *) echo "warning: libblas.so.3 is not OpenBLAS; training will be very slow." \
          "Install it: apt-get install libopenblas0-serial" >&2 ;;
esac
# Its own session (setsid), so it has its own scheduler autogroup: with autogroup scheduling a
# process's nice value only ranks it inside its group, and a build started from the same shell
# would otherwise share, and starve, the training's group (measured 357 vs 2,700 tokens/s).
# The process nice is set too (for kernels without autogroups); lowering it needs root.
OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS \
  setsid nohup nice -n "$NICE" /usr/bin/python3 "$ROOT/tools/train/train.py" \
  --run "$DIR" --threads "$THREADS" "$@" >>"$DIR/stdout.log" 2>&1 &
PID=$!
echo $PID >"$DIR/pid"
# The autogroup's nice: only once setsid has run (session id = pid): before, the autogroup is
# the caller's.
if [ -w /proc/self/autogroup ]; then
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ "$(ps -o sid= -p "$PID" 2>/dev/null | tr -d ' ')" = "$PID" ] && break
    sleep 0.1
  done
  if [ "$(ps -o sid= -p "$PID" 2>/dev/null | tr -d ' ')" = "$PID" ]; then
    echo "$NICE" >"/proc/$PID/autogroup" 2>/dev/null ||
      echo "warning: could not set the autogroup nice to $NICE" >&2
  else
    echo "warning: training is not in its own session yet; its priority is unchanged" >&2
  fi
fi
echo "training pid $PID (threads $THREADS, nice $NICE); log: $DIR/train.log (stdout/stderr: $DIR/stdout.log)"
echo "stop (checkpoints first): kill -TERM \$(cat $DIR/pid)"
