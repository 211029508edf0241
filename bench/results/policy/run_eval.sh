#!/bin/sh
# Evaluation runs (seeds 1..8 are evaluation seeds; tuning used seeds >= 1001 and the
# tuning instances T136 and TN136). Run from this folder, one simulation at a time.
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix P136.txt --algorithm recommended --steps 1000000 --runs 8 --seed 1 --jobs 1 --out p136 > p136.out 2>&1
$R simulate --matrix N136.txt --algorithm recommended --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n136 > n136.out 2>&1
$R simulate --matrix N136.txt --algorithm mergedts --steps 1000000 --runs 2 --seed 1 --jobs 1 --out n136_mergedts > n136_mergedts.out 2>&1
$R simulate --matrix N136.txt --algorithm self_sparring --steps 1000000 --runs 2 --seed 1 --jobs 1 --out n136_ss > n136_ss.out 2>&1
