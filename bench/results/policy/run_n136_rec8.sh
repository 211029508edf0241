#!/bin/sh
# recommended on N136 with the evaluation seeds 1-8 at 10^6 steps (the earlier figure had
# seeds 1-4; 8 runs per policy, the same seeds as Self-Sparring's run_eval5.sh and DTS's
# run_n136_dts.sh)
cd "$(dirname "$0")"
../../../.venv/bin/rankduel simulate --matrix N136.txt --algorithm recommended --steps 1000000 --runs 8 --seed 1 --jobs 2 --out n136_rec8 > n136_rec8.out 2>&1
