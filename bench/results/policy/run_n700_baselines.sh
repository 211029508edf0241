#!/bin/sh
# K = 700 navigational world (N700; regret against its Copeland winner 529): Self-Sparring
# (4 runs) and tuned DTS (alpha = 0.8^7; 2 runs, about 22 min each at 744 steps/s) at 10^6,
# the same seeds as recommended and MergeDTS in run_n700_cmp.sh (target 2's K = 700 clause)
cd "$(dirname "$0")"
R="nice -n 10 ../../../.venv/bin/rankduel"
case "$1" in
ss) $R simulate --matrix N700.txt --algorithm self_sparring --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n700_ss > n700_ss.out 2>&1 ;;
dts) $R simulate --matrix N700.txt --algorithm dts --param alpha=0.2097152 --steps 1000000 --runs 2 --seed 1 --jobs 2 --out n700_dts > n700_dts.out 2>&1 ;;
esac
