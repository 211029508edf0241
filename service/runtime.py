"""What every request handler needs, built once per process by ``create_app``
(:mod:`service.app`), and the one accessor the blueprints use to reach it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import current_app

from service.config import Config
from service.experiments.controller import Controller
from service.queue import TaskQueue
from service.rankers.client import RankerClient
from service.store import Store

#: where ``create_app`` keeps the process's runtime (``app.extensions``)
EXTENSION = "rankduel"


@dataclass
class Runtime:
    """Everything a request handler needs, built once per process by ``create_app``."""

    config: Config
    store: Store
    controller: Controller
    rankers: RankerClient
    queue: TaskQueue
    #: placements' views, made on the first search of a placement (service.placements.search)
    placements: Any = None
    #: the check of a request's key (service.access.gate), made by create_app
    gate: Any = None
    #: the state store's watch, made on the first search (service.search.outage)
    outage: Any = None

    @property
    def secret(self) -> bytes:
        return self.config.secret_key.encode()


def runtime() -> Runtime:
    """The current app's runtime (inside a request or an app context)."""
    return current_app.extensions[EXTENSION]
