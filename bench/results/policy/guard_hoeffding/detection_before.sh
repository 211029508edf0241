#!/bin/sh
# the same detection runs on commit 83d014b (the guard's Hoeffding radius over all
# pairs), from a worktree of it at /tmp/oldtree: git worktree add /tmp/oldtree 83d014b
cd /tmp/oldtree
MM=/work/main/bench/results/merge_med
O=/tmp/oldruns
py() { nice -n 15 /work/main/.venv/bin/python -c 'import sys; from cli.main import main; sys.exit(main(sys.argv[1:]))' "$@"; }
case "$1" in
a)
py simulate --matrix $MM/NC32w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 301 --jobs 1 --out $O/nc32w3 > $O/nc32w3.out 2>&1
py simulate --matrix $MM/NC64w4.txt --algorithm recommended --steps 1000000 --runs 8 --seed 401 --jobs 1 --out $O/nc64w4 > $O/nc64w4.out 2>&1
;;
b)
py simulate --matrix $MM/NC136w3.txt --algorithm recommended --steps 1000000 --runs 8 --seed 601 --jobs 1 --out $O/nc136w3 > $O/nc136w3.out 2>&1
;;
esac
