#!/bin/sh
# Is the regret flat once the policy certified? recommended from 10^6 to 10^7 steps on P136,
# P700 and F64, evaluation seeds from 1 (README.md, "Regret", the 10^7 column). Run from
# anywhere; outputs <out>/ and <out>.out beside this script.
cd "$(dirname "$0")"
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix P136.txt --algorithm recommended --steps 10000000 --runs 8 --seed 1 --jobs 1 --out p136_1e7 > p136_1e7.out 2>&1
$R simulate --matrix P700.txt --algorithm recommended --steps 10000000 --runs 4 --seed 1 --jobs 1 --out p700_1e7 > p700_1e7.out 2>&1
$R simulate --matrix F64.txt --algorithm recommended --steps 10000000 --runs 4 --seed 1 --jobs 1 --out f64_1e7 > f64_1e7.out 2>&1
