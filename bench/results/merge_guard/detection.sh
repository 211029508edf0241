#!/bin/sh
# Non-Condorcet detection of MergeGuard (then `recommended`): NC32 and its Condorcet control
# BT32, 2·10^5 steps, 20 runs; run from bench/results/merge_guard
R=../../../.venv/bin/rankduel
nice -n 15 $R simulate --matrix NC32.txt --algorithm recommended --steps 200000 --runs 20 --seed 101 --out nc32 > nc32.out 2>&1
nice -n 15 $R simulate --matrix BT32.txt --algorithm recommended --steps 200000 --runs 20 --seed 201 --out bt32 > bt32.out 2>&1
