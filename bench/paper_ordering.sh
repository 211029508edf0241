#!/usr/bin/env bash
# Regret at K=136: the papers' ordering MergeDTS < MergeRUCB << DTS, RUCB.
# A generated 136-ranker instance shaped like the papers' feature-ranker sets (MSLR has 136):
# Bradley-Terry strengths with many near-ties (smallest gap 0.002), a winner 0.02 ahead of
# the runner-up, and 25% uninformative rankers (tied at 0.5 among themselves, losing to all
# others). Tuned parameters of Li et al. 2020, §5.6: MergeDTS alpha = 0.8^6 = 0.262144, M = 16,
# C = 4e6; MergeRUCB alpha = 0.8^6, M = 8, C = 4e5; DTS and RUCB at their papers' default
# alpha = 0.51, and DTS once more at Li et al. 2020's tuned alpha = 0.8^7 (a second output folder).
# Usage: bench/paper_ordering.sh [RUNS] [JOBS]   (defaults 8 and 2; about 15 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-8}
JOBS=${2:-2}
PY=${PYTHON:-.venv/bin/python}

"$PY" -m cli.main matrix generate --kind uninformative --k 136 --gap 0.002 \
    --winner-gap 0.02 --spread 2.5 --uninformative-share 0.25 --uninformative-gap 0.02 \
    --seed 136 --out bench/data/p136.txt

"$PY" -m cli.main simulate --matrix bench/data/p136.txt \
    --algorithm mergedts,mergerucb,dts,rucb \
    --param mergedts.alpha=0.262144 --param mergedts.batch_size=16 --param mergedts.c=4000000 \
    --param mergerucb.alpha=0.262144 --param mergerucb.batch_size=8 --param mergerucb.c=400000 \
    --steps 1000000 --runs "$RUNS" --seed 1 --jobs "$JOBS" --out bench/results/paper_ordering

"$PY" -m cli.main simulate --matrix bench/data/p136.txt --algorithm dts \
    --param alpha=0.2097152 \
    --steps 1000000 --runs "$RUNS" --seed 1 --jobs "$JOBS" --out bench/results/paper_ordering_dts_tuned
