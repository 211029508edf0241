#!/bin/bash
# Run from anywhere; writes to stdout (speed_p136.out). Speed of recommended vs MergeDTS at K = 136, 5 repetitions; uptime before and after each
cd "$(dirname "$0")/../../.."
for rep in 1 2 3 4 5; do
  echo "=== repetition $rep"
  for steps in 5000 20000; do
    echo "--- P136, --steps $steps; $(uptime)"
    .venv/bin/python bench/bandit_speed.py --matrix bench/results/policy/P136.txt \
        --algorithms recommended,mergedts --repeat 2 --steps $steps --max-seconds 30 | grep -v '^# [wx]\|^# active\|^# same'
  done
  echo "--- Bradley-Terry K = 136 (the earlier figure's instance), --steps 20000; $(uptime)"
  .venv/bin/python bench/bandit_speed.py --ks 136 \
      --algorithms recommended,mergedts --repeat 2 --max-seconds 30 | grep -v '^# [wx]\|^# active\|^# same'
  echo "    after: $(uptime)"
done
