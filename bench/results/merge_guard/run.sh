#!/bin/sh
# MergeGuard benchmarks, run from bench/results/merge_guard
R=../../../.venv/bin/rankduel
nice -n 15 $R simulate --matrix P136.txt --algorithm recommended,mergedts --steps 1000000 --runs 4 --seed 1 --out k136 > k136.out 2>&1
