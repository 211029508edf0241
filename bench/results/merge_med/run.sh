#!/bin/sh
# MergeMED (recommended) evaluation. Run from bench/results/merge_med.
# Evaluation seeds only (tuning used T136 and seeds >= 1001; see BENCHMARKS.md).
R="nice -n 15 ../../../.venv/bin/rankduel"
# regret at K = 136 (P136 = bench/results/merge_guard/P136.txt, the "Regret at K = 136" instance)
$R simulate --matrix P136.txt --algorithm recommended,mergedts,mergeguard,mergerucb \
    --steps 1000000 --runs 8 --seed 1 --jobs 1 --out k136 > k136.out 2>&1
# detection: non-Condorcet instances, then Condorcet controls
$R simulate --matrix NC32.txt --algorithm recommended --steps 1000000 --runs 40 --seed 101 --jobs 1 --out nc32 > nc32.out 2>&1
$R simulate --matrix NC32w3.txt --algorithm recommended --steps 1000000 --runs 40 --seed 301 --jobs 1 --out nc32w3 > nc32w3.out 2>&1
$R simulate --matrix NC64w4.txt --algorithm recommended --steps 1000000 --runs 40 --seed 401 --jobs 1 --out nc64w4 > nc64w4.out 2>&1
$R simulate --matrix BT32.txt --algorithm recommended --steps 1000000 --runs 100 --seed 201 --jobs 1 --out bt32 > bt32.out 2>&1
$R simulate --matrix CYC2.txt --algorithm recommended --steps 1000000 --runs 40 --seed 501 --jobs 1 --out cyc2 > cyc2.out 2>&1
# baselines not run before on P136 (DTS: bench/results/paper_ordering_dts_tuned, same seeds)
$R simulate --matrix P136.txt --algorithm self_sparring,rmed1 --steps 1000000 --runs 4 --seed 1 --jobs 1 --out k136b > k136b.out 2>&1
$R simulate --matrix P136.txt --algorithm self_sparring,rmed1 --steps 1000000 --runs 4 --seed 5 --jobs 1 --out k136c > k136c.out 2>&1
# the 700-ranker instance (same generator as P136), Merge policies only (DTS and
# Self-Sparring run at ~250 and ~900 steps/s at K = 700: out of this session's time)
../../../.venv/bin/rankduel matrix generate --kind uninformative --k 700 --gap 0.002 --winner-gap 0.02 \
    --spread 2.5 --uninformative-share 0.25 --uninformative-gap 0.02 --seed 700 --out P700.txt
$R simulate --matrix P700.txt --algorithm recommended,mergedts,mergeguard --steps 1000000 --runs 4 --seed 1 --jobs 1 --out k700 > k700.out 2>&1
# a harder non-Condorcet shape: 136 rankers, 3 Copeland winners 0.004-0.008 apart
../../../.venv/bin/rankduel matrix generate --kind non-condorcet --k 136 --winners 3 --gap 0.002 --spread 2.5 --seed 7 --out NC136w3.txt
$R simulate --matrix NC136w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 601 --jobs 1 --out nc136w3 > nc136w3.out 2>&1
