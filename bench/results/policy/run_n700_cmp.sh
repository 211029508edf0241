#!/bin/sh
# K = 700 navigational world (N700: no Condorcet winner at 300 comparisons per pair, so
# regret is measured against its Copeland winner, 529): recommended beside MergeDTS, the
# same 4 seeds, 10^6 steps (issue target 2's K = 700 clause)
cd "$(dirname "$0")"
R="nice -n 10 ../../../.venv/bin/rankduel"
$R simulate --matrix N700.txt --algorithm recommended,mergedts --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n700_cmp > n700_cmp.out 2>&1
