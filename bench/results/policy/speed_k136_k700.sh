#!/bin/sh
# Steps per second of recommended, MergeMED, MergeDTS and Self-Sparring on Bradley-Terry
# instances at K = 136 and 700 (README.md, "Speed"; speed.out). Run from anywhere.
cd "$(dirname "$0")"
nice -n 15 ../../../.venv/bin/python ../../bandit_speed.py --ks 136 700 --algorithms recommended,mergemed,mergedts,self_sparring --repeat 2 > speed.out 2>&1
