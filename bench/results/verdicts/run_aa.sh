#!/bin/sh
# The near-tied and A/A runs of bench/results/verdicts/README.md, one process at a time
# (shared machine); resumable where --resume is given.
cd "$(dirname "$0")/../../.." || exit 1
PY=${PY:-.venv/bin/python}
O=bench/results/verdicts
nice -n 10 $PY bench/verdict_error.py near-tied --runs 2000 --steps 30000 --seed 1 \
    --out $O/near_tied.json --resume > $O/near_tied.out 2>&1
aa() { name=$1; shift; nice -n 10 $PY bench/aa_offline.py "$@" --out $O/aa_$name.json > $O/aa_$name.out 2>&1; }
aa coin2 coin --arms 2 --runs 1000 --steps 5000 --seed 1
aa coin5 coin --arms 5 --runs 1000 --steps 5000 --seed 1
aa world2 world --arms 2 --runs 1000 --steps 1000 --seed 1
aa world5 world --arms 5 --runs 1000 --steps 1000 --seed 1
aa lengths_td world --arms 2 --runs 1000 --steps 1000 --seed 1 --lengths 5,10 --method team_draft
aa lengths_pi world --arms 2 --runs 1000 --steps 1000 --seed 1 --lengths 5,10 --method probabilistic
