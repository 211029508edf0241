#!/bin/sh
# Detection: the non-Condorcet instance NC32 and its Condorcet control BT32 of
# bench/results/merge_med (same seeds as there: 101.., 201..), fewer runs (8).
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 8 --seed 101 --jobs 1 --out nc32 > nc32.out 2>&1
$R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 8 --seed 201 --jobs 1 --out bt32 > bt32.out 2>&1
$R simulate --matrix P700.txt --algorithm recommended --steps 1000000 --runs 2 --seed 3 --jobs 1 --out p700b > p700b.out 2>&1
# flatness from 10^6 to 10^7 where the policy certified
$R simulate --matrix P700.txt --algorithm recommended --steps 10000000 --runs 4 --seed 1 --jobs 1 --out p700_1e7 > p700_1e7.out 2>&1
$R simulate --matrix F64.txt --algorithm recommended --steps 10000000 --runs 4 --seed 1 --jobs 1 --out f64_1e7 > f64_1e7.out 2>&1
