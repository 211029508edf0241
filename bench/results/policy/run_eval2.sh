#!/bin/sh
# Second batch of evaluation runs (evaluation seeds 1..8), run after run_eval.sh.
R="nice -n 15 ../../../.venv/bin/rankduel"
P="nice -n 15 ../../../.venv/bin/python ../../certification_floor.py"
$P F64.txt --runs 8 --seed 1 --alphas 0.236 --steps 1e6 > oracle_F64.out 2>&1
$R simulate --matrix F64.txt --algorithm recommended --steps 1000000 --runs 4 --seed 1 --jobs 1 --out f64 > f64.out 2>&1
$R simulate --matrix I64.txt --algorithm recommended --steps 1000000 --runs 4 --seed 1 --jobs 1 --out i64 > i64.out 2>&1
$R simulate --matrix P700.txt --algorithm recommended --steps 1000000 --runs 2 --seed 1 --jobs 1 --out p700 > p700.out 2>&1
$R simulate --matrix P136.txt --algorithm recommended --steps 10000000 --runs 8 --seed 1 --jobs 1 --out p136_1e7 > p136_1e7.out 2>&1
