#!/bin/sh
# Tuned DTS (alpha = 0.8^7, as in BENCHMARKS "Regret at K = 136") on N136 with the evaluation
# seeds 1-8 at 10^6 steps: the 8-run baseline of target 2 (the earlier figure had 2 runs)
cd "$(dirname "$0")"
../../../.venv/bin/rankduel simulate --matrix N136.txt --algorithm dts --param alpha=0.2097152 --steps 1000000 --runs 8 --seed 1 --jobs 2 --out n136_dts8 > n136_dts8.out 2>&1
