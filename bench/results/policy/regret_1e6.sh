#!/bin/sh
# Regret at 10^6 steps on the instances with a Condorcet winner (P136, N136, P700, F64, I64),
# evaluation seeds from 1 (tuning used seeds >= 1001 and the tuning instances T136, TN136),
# and the oracle certifier's floor on F64 (bench/certification_floor.py). One simulation at a
# time; run from anywhere. Pass one instance name (p136 n136 p700 f64 i64) to run only it.
# Outputs: <out>/ and <out>.out beside this script (README.md, "Regret").
cd "$(dirname "$0")"
R="nice -n 15 ../../../.venv/bin/rankduel"
P="nice -n 15 ../../../.venv/bin/python ../../certification_floor.py"
sim() {  # sim MATRIX ALGORITHM RUNS SEED OUT [--param ...]
    m=$1 a=$2 n=$3 s=$4 o=$5; shift 5
    $R simulate --matrix "$m" --algorithm "$a" "$@" --steps 1000000 --runs "$n" --seed "$s" --jobs 1 --out "$o" > "$o.out" 2>&1
}
only=${1:-all}
if [ "$only" = all ] || [ "$only" = p136 ]; then
    sim P136.txt recommended 8 1 p136
fi
if [ "$only" = all ] || [ "$only" = n136 ]; then
    sim N136.txt recommended 4 1 n136              # seeds 1-4 (n136_rec8 repeats them)
    sim N136.txt recommended 8 1 n136_rec8         # seeds 1-8, as the baselines below
    sim N136.txt mergedts 2 1 n136_mergedts
    sim N136.txt self_sparring 2 1 n136_ss
    uptime > n136_ss8.log
    sim N136.txt self_sparring 8 1 n136_ss8        # all eight seeds (n136_ss has 2)
    uptime >> n136_ss8.log
    sim N136.txt dts 8 1 n136_dts8 --param alpha=0.2097152   # tuned DTS, alpha = 0.8^7
fi
if [ "$only" = all ] || [ "$only" = p700 ]; then
    sim P700.txt recommended 2 1 p700
    sim P700.txt recommended 2 3 p700b             # seeds 3-4
fi
if [ "$only" = all ] || [ "$only" = f64 ]; then
    $P F64.txt --runs 8 --seed 1 --alphas 0.236 --steps 1e6 > oracle_F64.out 2>&1
    sim F64.txt recommended 4 1 f64
fi
if [ "$only" = all ] || [ "$only" = i64 ]; then
    sim I64.txt recommended 4 1 i64
fi
