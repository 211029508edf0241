#!/bin/sh
# Copeland regret at 10^6 steps on the K = 700 navigational world (N700: no Condorcet winner
# at 300 comparisons per pair, so regret is measured against its Copeland winner, 529):
# recommended beside MergeDTS, Self-Sparring and tuned DTS (alpha = 0.8^7) on the same seeds
# (README.md, "The targets of the issue", K = 700). Run from anywhere; one part per call:
#   first  recommended alone, 1 run (n700)
#   cmp    recommended and MergeDTS, 4 runs (n700_cmp)
#   ss     Self-Sparring, 4 runs (n700_ss)
#   dts    tuned DTS, 2 runs (n700_dts; about 22 min each at 744 steps/s)
cd "$(dirname "$0")"
R="nice -n 10 ../../../.venv/bin/rankduel"
case "$1" in
first) nice -n 15 ../../../.venv/bin/rankduel simulate --matrix N700.txt --algorithm recommended --steps 1000000 --runs 1 --seed 1 --jobs 1 --out n700 > n700.out 2>&1 ;;
cmp) $R simulate --matrix N700.txt --algorithm recommended,mergedts --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n700_cmp > n700_cmp.out 2>&1 ;;
ss) $R simulate --matrix N700.txt --algorithm self_sparring --steps 1000000 --runs 4 --seed 1 --jobs 1 --out n700_ss > n700_ss.out 2>&1 ;;
dts) $R simulate --matrix N700.txt --algorithm dts --param alpha=0.2097152 --steps 1000000 --runs 2 --seed 1 --jobs 2 --out n700_dts > n700_dts.out 2>&1 ;;
*) echo "usage: $0 first|cmp|ss|dts" >&2; exit 2 ;;
esac
