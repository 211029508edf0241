#!/bin/sh
# Detection with the guard's normal-mixture edge test (bandits/condorcet_check.py):
# recommended on every non-Condorcet instance and its Condorcet controls, 10^6 steps.
# Two streams in parallel (a, b); seeds as in the earlier detection runs.
R="nice -n 15 ../../../.venv/bin/rankduel"
MM=../merge_med
case "$1" in
a)
$R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 8 --seed 101 --jobs 1 --out nc32_mix > nc32_mix.out 2>&1
$R simulate --matrix I64.txt --algorithm recommended --steps 1000000 --runs 8 --seed 1 --jobs 1 --out i64_mix > i64_mix.out 2>&1
$R simulate --matrix $MM/NC32w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 301 --jobs 1 --out nc32w3_mix > nc32w3_mix.out 2>&1
$R simulate --matrix $MM/NC64w4.txt --algorithm recommended --steps 1000000 --runs 8 --seed 401 --jobs 1 --out nc64w4_mix > nc64w4_mix.out 2>&1
;;
b)
$R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 8 --seed 201 --jobs 1 --out bt32_mix > bt32_mix.out 2>&1
$R simulate --matrix N700.txt --algorithm recommended --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n700_mix > n700_mix.out 2>&1
$R simulate --matrix $MM/NC136w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 601 --jobs 1 --out nc136w3_mix > nc136w3_mix.out 2>&1
;;
esac
