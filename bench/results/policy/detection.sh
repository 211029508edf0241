#!/bin/sh
# Does recommended flag an instance without a Condorcet winner within 10^6 steps, and never
# flag one with a winner? Every non-Condorcet instance beside its Condorcet controls; seeds as
# in bench/results/merge_med (101.. NC32, 201.. BT32, 301.. NC32w3, 401.. NC64w4, 601.. NC136w3)
# (README.md, "Detection"). Run from anywhere; one part per call:
#   hoeffding  the earlier guard (Hoeffding edge test): I64 with MergeMED, NC32, BT32
#   a, b       the guard's normal-mixture edge test (bandits/condorcet_check.py), two streams
#              that can run in parallel
cd "$(dirname "$0")"
R="nice -n 15 ../../../.venv/bin/rankduel"
MM=../merge_med
sim() {  # sim MATRIX ALGORITHM RUNS SEED OUT
    $R simulate --matrix "$1" --algorithm "$2" --steps 1000000 --runs "$3" --seed "$4" --jobs 1 --out "$5" > "$5.out" 2>&1
}
case "$1" in
hoeffding)
    sim I64.txt mergemed 2 1 i64_mergemed
    sim NC32.txt recommended 8 101 nc32
    sim BT32.txt recommended 8 201 bt32 ;;
a)
    sim NC32.txt recommended 8 101 nc32_mix
    sim I64.txt recommended 8 1 i64_mix
    sim $MM/NC32w3.txt recommended 8 301 nc32w3_mix
    sim $MM/NC64w4.txt recommended 8 401 nc64w4_mix ;;
b)
    sim BT32.txt recommended 8 201 bt32_mix
    sim N700.txt recommended 4 1 n700_mix
    sim $MM/NC136w3.txt recommended 8 601 nc136w3_mix ;;
*) echo "usage: $0 hoeffding|a|b" >&2; exit 2 ;;
esac
