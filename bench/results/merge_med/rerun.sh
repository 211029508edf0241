#!/bin/sh
# run.sh without the baselines (Self-Sparring, RMED1 are unaffected by MergeMED changes)
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix P136.txt --algorithm recommended,mergedts,mergeguard,mergerucb --steps 1000000 --runs 8 --seed 1 --jobs 1 --out k136 > k136.out 2>&1
$R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 40 --seed 101 --jobs 1 --out nc32 > nc32.out 2>&1
$R simulate --matrix NC32w3.txt --algorithm recommended --steps 1000000 --runs 40 --seed 301 --jobs 1 --out nc32w3 > nc32w3.out 2>&1
$R simulate --matrix NC64w4.txt --algorithm recommended --steps 1000000 --runs 40 --seed 401 --jobs 1 --out nc64w4 > nc64w4.out 2>&1
$R simulate --matrix NC136w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 601 --jobs 1 --out nc136w3 > nc136w3.out 2>&1
$R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 100 --seed 201 --jobs 1 --out bt32 > bt32.out 2>&1
$R simulate --matrix CYC2.txt --algorithm recommended --steps 1000000 --runs 40 --seed 501 --jobs 1 --out cyc2 > cyc2.out 2>&1
$R simulate --matrix P700.txt --algorithm recommended,mergedts,mergeguard --steps 1000000 --runs 4 --seed 1 --jobs 1 --out k700 > k700.out 2>&1
