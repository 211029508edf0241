#!/bin/sh
# The K = 136 runs of bench/results/verdicts/README.md, one process at a time (shared
# machine); the A/A and near-tied runs are in run_aa.sh.
cd "$(dirname "$0")/../../.." || exit 1
PY=${PY:-.venv/bin/python}
nice -n 10 $PY bench/verdict_error.py matrix bench/results/policy/P136.txt --runs 30 \
    --steps 1000000 --seed 1 --out bench/results/verdicts/p136.json --resume > bench/results/verdicts/p136.out 2>&1
nice -n 10 $PY bench/verdict_error.py matrix bench/results/policy/N136.txt --runs 30 \
    --steps 1000000 --seed 1 --out bench/results/verdicts/n136.json --resume > bench/results/verdicts/n136.out 2>&1
