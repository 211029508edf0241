#!/bin/sh
# Target 2 on N136: Self-Sparring with all eight evaluation seeds (run_eval.sh ran 2), and
# the oracle certifier's regret at 10^6 per seed. Run from this folder.
R="nice -n 15 ../../../.venv/bin/rankduel"
uptime > run_eval5.log
$R simulate --matrix N136.txt --algorithm self_sparring --steps 1000000 --runs 8 --seed 1 --jobs 1 --out n136_ss8 > n136_ss8.out 2>&1
uptime >> run_eval5.log
