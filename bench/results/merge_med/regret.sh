#!/bin/sh
# Regret of MergeMED beside the other Merge policies at K = 136 (P136, the instance of
# "Regret at K = 136") and K = 700 (P700, same generator), 10^6 steps, evaluation seeds
# (tuning used T136 and seeds >= 1001). When these ran `recommended` was MergeMED: to repeat
# them today, pass --algorithm mergemed for it. Run from anywhere (README.md, "Regret at
# K = 136", "Regret at K = 700"). With `baselines`, also Self-Sparring and RMED1 on P136
# (unaffected by MergeMED's changes, so the last run after a change left them out).
cd "$(dirname "$0")"
R="nice -n 15 ../../../.venv/bin/rankduel"
$R simulate --matrix P136.txt --algorithm recommended,mergedts,mergeguard,mergerucb \
    --steps 1000000 --runs 8 --seed 1 --jobs 1 --out k136 > k136.out 2>&1
if [ "$1" = baselines ]; then  # DTS: bench/results/paper_ordering_dts_tuned, same seeds
    $R simulate --matrix P136.txt --algorithm self_sparring,rmed1 --steps 1000000 --runs 4 --seed 1 --jobs 1 --out k136b > k136b.out 2>&1
    $R simulate --matrix P136.txt --algorithm self_sparring,rmed1 --steps 1000000 --runs 4 --seed 5 --jobs 1 --out k136c > k136c.out 2>&1
fi
# Merge policies only at K = 700 (DTS and Self-Sparring run at ~250 and ~900 steps/s there)
[ -f P700.txt ] || ../../../.venv/bin/rankduel matrix generate --kind uninformative --k 700 --gap 0.002 --winner-gap 0.02 \
    --spread 2.5 --uninformative-share 0.25 --uninformative-gap 0.02 --seed 700 --out P700.txt
$R simulate --matrix P700.txt --algorithm recommended,mergedts,mergeguard --steps 1000000 --runs 4 --seed 1 --jobs 1 --out k700 > k700.out 2>&1
