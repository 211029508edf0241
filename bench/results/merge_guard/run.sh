#!/bin/sh
# MergeGuard benchmarks (issue 15), run from bench/results/merge_guard
R=../../../.venv/bin/rankduel
nice -n 15 $R simulate --matrix P136.txt --algorithm recommended,mergedts --steps 1000000 --runs 4 --seed 1 --out k136 > k136.txt 2>&1
nice -n 15 $R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 20 --seed 101 --out nc32 > nc32.txt 2>&1
nice -n 15 $R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 20 --seed 201 --out bt32 > bt32.txt 2>&1
