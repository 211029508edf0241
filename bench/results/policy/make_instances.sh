#!/bin/sh
# Development and tuning instances of the recommended-policy study (run from this folder).
# Comparisons per pair are what this session's CPU could afford (2 cores shared by 5
# agents, load average 6-16): N136 as in BENCHMARKS.md (20,000), the others fewer.
set -e
R="nice -n 15 ../../../.venv/bin/rankduel"
# P136 and P700: the Bradley-Terry-like instances of bench/results/merge_med (copied here)
cp ../merge_med/P136.txt P136.txt
cp ../merge_med/P700.txt P700.txt
# navigational world, K = 136 (the command of BENCHMARKS.md, "A harder instance")
[ -f N136.txt ] || $R matrix estimate --world 1:136 --method probabilistic --click-model navigational --comparisons 20000 --seed 1 --jobs 2 --out N136.txt
# navigational world, K = 700
[ -f N700.txt ] || $R matrix estimate --world 1:700 --method probabilistic --click-model navigational --comparisons 300 --seed 1 --jobs 2 --out N700.txt
# the other click models, K = 136, same world
[ -f I136.txt ] || $R matrix estimate --world 1:136 --method probabilistic --click-model informational --comparisons 2000 --seed 1 --jobs 2 --out I136.txt
[ -f F136.txt ] || $R matrix estimate --world 1:136 --method probabilistic --click-model perfect --comparisons 2000 --seed 1 --jobs 2 --out F136.txt
# tuning instance: another world (seed 2), navigational; tuning also uses T136 and seeds >= 1001
[ -f TN136.txt ] || $R matrix estimate --world 2:136 --method probabilistic --click-model navigational --comparisons 2000 --seed 2 --jobs 2 --out TN136.txt
cp ../merge_med/T136.txt T136.txt
# (added while the K = 136 estimates above were still queued, to fit the session's CPU:)
# the other click models at K = 64 on world 1 (2,000 comparisons per pair)
[ -f I64.txt ] || $R matrix estimate --world 1:64 --method probabilistic --click-model informational --comparisons 2000 --seed 1 --out I64.txt
[ -f F64.txt ] || $R matrix estimate --world 1:64 --method probabilistic --click-model perfect --comparisons 2000 --seed 1 --out F64.txt
