#!/bin/sh
# Non-Condorcet detection of MergeMED's guard: instances without a Condorcet winner (NC32,
# NC32w3, NC64w4, NC136w3: 136 rankers, 3 Copeland winners 0.004-0.008 apart; CYC2), then the
# Condorcet control BT32; 10^6 steps. When these ran `recommended` was MergeMED: to repeat
# them today, pass --algorithm mergemed. Run from anywhere (README.md, "Non-Condorcet
# detection").
cd "$(dirname "$0")"
R="nice -n 15 ../../../.venv/bin/rankduel"
[ -f NC136w3.txt ] || ../../../.venv/bin/rankduel matrix generate --kind non-condorcet --k 136 --winners 3 --gap 0.002 --spread 2.5 --seed 7 --out NC136w3.txt
$R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 40 --seed 101 --jobs 1 --out nc32 > nc32.out 2>&1
$R simulate --matrix NC32w3.txt --algorithm recommended --steps 1000000 --runs 40 --seed 301 --jobs 1 --out nc32w3 > nc32w3.out 2>&1
$R simulate --matrix NC64w4.txt --algorithm recommended --steps 1000000 --runs 40 --seed 401 --jobs 1 --out nc64w4 > nc64w4.out 2>&1
$R simulate --matrix NC136w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 601 --jobs 1 --out nc136w3 > nc136w3.out 2>&1
$R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 100 --seed 201 --jobs 1 --out bt32 > bt32.out 2>&1
$R simulate --matrix CYC2.txt --algorithm recommended --steps 1000000 --runs 40 --seed 501 --jobs 1 --out cyc2 > cyc2.out 2>&1
