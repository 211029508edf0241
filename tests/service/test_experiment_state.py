"""An experiment's state as the API answers it conforms to its response model
(:class:`service.schemas.Experiment`) and reads the policy: the effective parameters,
defaults included, and a Merge policy's stage and batches; the list of experiments
conforms too. Against the app on a real loopback port, the session's real Redis and toy
rankers. The pure checks of the schemas and the OpenAPI document are in
tests/unit/test_schemas.py.
"""

from __future__ import annotations

import bandits
from service import schemas


def test_experiment_state_conforms_and_reads_the_policy(client, ranker_server):
    rankers = [{"name": n, "url": f"{ranker_server.url}/r/{n}"}
               for n in ("good", "bad", "mid", "alt")]
    exp = client.create_experiment(name="state", rankers=rankers, algorithm="mergedts",
                                   interleaving="team_draft", params={"batch_size": 2, "c": 5})
    for _ in range(3):
        client.search(exp["id"], "q")
    state = client.experiment(exp["id"])
    schemas.Experiment.model_validate(state)
    assert state["t"] == state["selections"] == 3
    # the effective parameters, defaults included (the preset's alpha was not sent)
    assert state["params"] == bandits.make_bandit("mergedts", 4, batch_size=2, c=5).params()
    assert state["params"]["preset"] == "tuned" and "alpha" in state["params"]
    assert state["stage"] == 1
    assert sorted(n for b in state["batches"] for n in b) == ["alt", "bad", "good", "mid"]
    summary = client.request("GET", "/experiments", admin=True)[1]
    schemas.ExperimentList.model_validate(summary)
    plain = client.create_experiment(name="plain", rankers=rankers[:2], algorithm="uniform",
                                     interleaving="team_draft")
    assert plain["stage"] is None and plain["batches"] is None and plain["params"] == {}
