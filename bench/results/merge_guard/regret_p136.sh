#!/bin/sh
# Regret of MergeGuard (then `recommended`) beside MergeDTS on P136, 10^6 steps, 4 runs;
# run from bench/results/merge_guard (../merge_med/README.md, "The earlier version")
R=../../../.venv/bin/rankduel
nice -n 15 $R simulate --matrix P136.txt --algorithm recommended,mergedts --steps 1000000 --runs 4 --seed 1 --out k136 > k136.out 2>&1
