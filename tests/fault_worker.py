"""A ``rankduel worker`` whose credit transactions are slow: a fault-injection wrapper.

``python tests/fault_worker.py DELAY_MS worker [args...]`` runs the real worker with
:func:`service.credit.step.apply` sleeping ``DELAY_MS`` per impression inside the transaction
(after the reads, before EXEC), and each outcome event's step
(:func:`service.credit.outcome_events.outcomes`) as long, widening the window in which a
test can kill the worker mid-batch. The patch is made in the main process, so prefork
pool processes inherit it. Production code carries no such knob.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    delay_s = float(sys.argv[1]) / 1000.0
    from service.credit import step as credit

    real_apply = credit.apply

    def slow_apply(bandit, impressions, **kw):
        time.sleep(delay_s * len(impressions))
        return real_apply(bandit, impressions, **kw)

    credit.apply = slow_apply
    from service.credit import outcome_events

    real_outcomes = outcome_events.outcomes

    def slow_outcomes(event, entry, metrics):  # an outcome event's step: as slow
        time.sleep(delay_s)
        return real_outcomes(event, entry, metrics)

    outcome_events.outcomes = slow_outcomes
    from cli.main import main as cli_main

    return cli_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
