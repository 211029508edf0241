#!/bin/sh
# Near-tied instances where certification happens within the run (the winner 0.01-0.03
# ahead of three rivals), so that a wrong certificate could show; resumable.
cd "$(dirname "$0")/../../.." || exit 1
PY=${PY:-.venv/bin/python}
nice -n 10 $PY bench/verdict_error.py near-tied --close 0.01,0.03 --runs 2000 --steps 50000 \
    --seed 1 --out bench/results/verdicts/near_tied_certifiable.json --resume \
    > bench/results/verdicts/near_tied_certifiable.out 2>&1
