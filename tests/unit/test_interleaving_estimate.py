"""The preference-matrix estimator and ``rankduel matrix estimate``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import interleaving as il
from cli.main import main
from cli.matrix_files import load_matrix
from interleaving.estimate import estimate_matrix
from interleaving.world import World


@pytest.mark.parametrize("method", il.METHODS)
def test_matrix_is_a_valid_preference_matrix(method):
    w = World(2, 5, n_queries=30)
    P, N = estimate_matrix(w, method, "informational", 300, np.random.default_rng(0),
                           return_counts=True)
    assert P.shape == (5, 5)
    assert np.allclose(P + P.T, 1.0, atol=1e-12)
    assert (np.diag(P) == 0.5).all() and (P >= 0).all() and (P <= 1).all()
    off = ~np.eye(5, dtype=bool)
    # informational users click almost always: nearly every comparison is a duel
    assert (N[off] > 250).all() and (N[off] <= 300).all()


def test_same_seed_same_matrix_and_jobs_do_not_change_it():
    w = World(3, 12, n_queries=20)  # 66 pairs: three chunks of 32 pairs
    a = estimate_matrix(w, "team_draft", "navigational", 200, np.random.default_rng(7))
    b = estimate_matrix(w, "team_draft", "navigational", 200, np.random.default_rng(7),
                        jobs=2)
    c = estimate_matrix(w, "team_draft", "navigational", 200, np.random.default_rng(8))
    assert (a == b).all()
    assert not (a == c).all()


def test_progress_counts_every_comparison():
    w = World(3, 4, n_queries=10)
    seen = []
    estimate_matrix(w, "probabilistic", "perfect", 250, np.random.default_rng(0),
                    batch_size=100, progress=seen.append)
    assert sum(seen) == 6 * 250 and max(seen) <= 100


def test_bad_arguments_are_refused():
    w = World(1, 3, n_queries=5)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown interleaving method"):
        estimate_matrix(w, "nope", "navigational", 10, rng)
    with pytest.raises(ValueError, match="unknown click model"):
        estimate_matrix(w, "probabilistic", "nope", 10, rng)
    with pytest.raises(ValueError, match="comparisons"):
        estimate_matrix(w, "probabilistic", "navigational", 0, rng)


def test_cli_writes_a_matrix_loadtxt_and_simulate_read(tmp_path: Path, capsys):
    out = tmp_path / "P.txt"
    rc = main(["matrix", "estimate", "--world", "5:6", "--method", "probabilistic",
               "--click-model", "navigational", "--comparisons", "400", "--seed", "3",
               "--out", str(out), "--queries", "40"])
    assert rc == 0
    assert "wrote" in capsys.readouterr().out
    P = np.loadtxt(out)
    assert P.shape == (6, 6)
    assert np.allclose(P + P.T, 1.0, atol=1e-9)
    assert np.array_equal(load_matrix(out), P)  # the simulator's reader validates it
    header = out.read_text().splitlines()[0]
    assert header.startswith("# rankduel matrix estimate --world 5:6 --method probabilistic")
    # the same command gives the same file
    again = tmp_path / "again.txt"
    main(["matrix", "estimate", "--world", "5:6", "--method", "probabilistic",
          "--click-model", "navigational", "--comparisons", "400", "--seed", "3",
          "--out", str(again), "--queries", "40"])
    assert np.array_equal(np.loadtxt(again), P)


def test_cli_reports_bad_input_as_one_line(tmp_path: Path, capsys):
    rc = main(["matrix", "estimate", "--world", "1:4", "--method", "nope",
               "--comparisons", "5", "--out", str(tmp_path / "P.txt")])
    assert rc == 2
    assert "unknown --method" in capsys.readouterr().err
    rc = main(["matrix", "estimate", "--world", "x", "--comparisons", "5",
               "--out", str(tmp_path / "P.txt")])
    assert rc == 2
    assert "SEED:K" in capsys.readouterr().err
