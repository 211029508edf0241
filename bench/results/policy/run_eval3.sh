#!/bin/sh
# Third batch: detection on the real-like non-Condorcet matrices, and speed.
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix I64.txt --algorithm mergemed --steps 1000000 --runs 2 --seed 1 --jobs 1 --out i64_mergemed > i64_mergemed.out 2>&1
$R simulate --matrix N700.txt --algorithm recommended --steps 1000000 --runs 1 --seed 1 --jobs 1 --out n700 > n700.out 2>&1
nice -n 15 ../../../.venv/bin/python ../../bandit_speed.py --ks 136 700 --algorithms recommended,mergemed,mergedts,self_sparring --repeat 2 > speed.out 2>&1
