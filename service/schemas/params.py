"""``POST /experiments``' body, generated: one model per algorithm, its parameters read
from the policy's declaration (``PARAMS``, :mod:`bandits.params`) and its interleaving
methods (pairwise or multileaving)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    AfterValidator,
    Field,
    RootModel,
    WithJsonSchema,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

import bandits
from bandits.params import Param, declared_default
from service.outcomes.declared import (
    ACTION_PATTERN,
    MAX_METRICS,
    MAX_VALUE,
    MAX_WINDOW_S,
    NAME_PATTERN,
)
from service.schemas.base import (
    MAX_RANKERS,
    MAX_SEED,
    PROBE,
    Closed,
    Int,
    Name,
    RankerName,
)
from service.schemas.experiments import (
    TRAFFIC_DOC,
    RankerIn,
    Traffic,
)
from service.schemas.frontend import (
    _no_default,
)
from service.schemas.placements import Guardrails, PlacementName
from service.segments.dimensions import (
    DIMENSION_PATTERN,
    MAX_DIMENSIONS,
    MAX_VALUES,
    OTHER,
    VALUE_PATTERN,
)
from service.segments.dimensions import problems as segment_problems


def _check_segments(declared: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
    """What the field's JSON Schema cannot say: no value twice, ``other`` reserved."""
    found = segment_problems(declared or {})
    if found:
        raise PydanticCustomError("rd_segments", "{problems}", {"problems": "; ".join(found)})
    return declared


def _segment_values_schema(schema: dict[str, Any]) -> None:
    """Each value once, ``other`` never (it is the values' catch-all)."""
    schema["uniqueItems"] = True
    schema["items"]["not"] = {"const": OTHER}


def _closed_segments(schema: dict[str, Any]) -> None:
    """Only dimensions whose names match the pattern."""
    schema["additionalProperties"] = False


Segments = Annotated[
    dict[Annotated[str, Field(pattern=DIMENSION_PATTERN)],
         Annotated[list[Annotated[str, Field(pattern=VALUE_PATTERN)]],
                   Field(min_length=1, max_length=MAX_VALUES,
                         json_schema_extra=_segment_values_schema)]],
    Field(min_length=1, max_length=MAX_DIMENSIONS, json_schema_extra=_closed_segments),
    AfterValidator(_check_segments)]


class MetricIn(Closed):
    """A metric the experiment is judged on besides (or as) the click
    (docs/conversions.md): ``{"name": "click"}`` is the click metric; any other names
    the ``action`` reported with ``POST /outcomes``."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] = Field(
        description="unique within the experiment; `click` is the click metric")
    action: Annotated[str, Field(pattern=ACTION_PATTERN)] | None = Field(
        None, description="the action POST /outcomes reports (`add_to_cart`, `purchase`); "
                          "required but for the click metric")
    value: Literal["count", "sum"] | None = Field(
        None, description="count (default): each attributed event is a comparison; sum: "
                          "its strength grows with the event's value up to `cap`")
    window_s: Int(ge=1, le=MAX_WINDOW_S) | None = Field(
        None, description="an event counts for the latest impression that showed the "
                          "document to the user at most this long before (default "
                          "86400, at most 7 days)")
    cap: Annotated[float, Field(gt=0, le=MAX_VALUE)] | None = Field(
        None, description="a sum metric's value at which an event counts as a full win "
                          "(default 1000): each outcome s becomes ½ + (s − ½)·min(value, "
                          "cap)/cap")


Metrics = Annotated[list[MetricIn], Field(min_length=1, max_length=MAX_METRICS)]


# algorithm params
def param_annotation(param: Param) -> Any:
    """The pydantic type of a declared parameter (:mod:`bandits.params`): its bounds or
    choices reach the JSON Schema, so the document states them."""
    if param.choices is not None:
        kind: Any = Literal[param.choices]
    elif param.dtype in (str, bool):
        kind = param.dtype
    else:
        bounds = {k: v for k in ("ge", "gt", "le", "lt")
                  if (v := getattr(param, k)) is not None}
        kind = Int(**bounds) if param.dtype is int else Annotated[float, Field(**bounds)]
    return kind | None if param.nullable else kind


def param_description(param: Param) -> str:
    """A declared parameter's one line of doc, with its default."""
    return f"{param.desc}; default: {declared_default(param)}"


class _Params(Closed):
    algorithm: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        """Names and types first, by the policy's declaration: it names an unknown
        parameter and lists the valid ones (the bounds are the fields')."""
        if isinstance(data, dict):
            try:
                bandits.check_params(cls.algorithm, data, ranges=False)
            except ValueError as exc:
                raise PydanticCustomError(
                    "rd_params", "invalid params for {algorithm}: {reason}",
                    {"algorithm": cls.algorithm, "reason": str(exc)}) from None
        return data


def _params_model(algorithm: str) -> type[_Params]:
    """The ``params`` object of one algorithm, from its declaration."""
    # absent: the policy's default; null is not a value (check_params refuses it)
    fields = {}
    for name, param in bandits.get_algorithm(algorithm).PARAMS.items():
        fields[name] = (param_annotation(param),
                        Field(None, description=param_description(param),
                              json_schema_extra=_no_default))
    title = "".join(p.title() for p in algorithm.split("_"))
    model = create_model(f"{title}Params", __base__=_Params, **fields)
    model.algorithm = algorithm
    return model


def _methods() -> tuple[list[str], list[str]]:
    import interleaving

    pairwise = list(interleaving.PAIRWISE_METHODS)
    return pairwise, [m for m in interleaving.METHODS if m not in pairwise]


def _interleaving_for(algorithm: str, multi: bool) -> Any:
    """The interleaving methods an algorithm can run with (a pairwise policy needs a
    pairwise method, a set-selecting one a multileaving method)."""
    pairwise, multileave = _methods()
    allowed = multileave if multi else pairwise

    def check(method: str) -> str:
        if method in allowed:
            return method
        if method in pairwise + multileave:
            kind = ("compares sets of rankers: choose a multileaving method" if multi
                    else "compares pairs: choose a pairwise interleaving method")
            raise PydanticCustomError("rd_interleaving", "{algorithm} {kind} ({allowed})",
                                      {"algorithm": algorithm, "kind": kind,
                                       "allowed": ", ".join(allowed)})
        raise PydanticCustomError("rd_interleaving",
                                  "unknown interleaving method '{method}'; known: {known}",
                                  {"method": method, "known": ", ".join(pairwise + multileave)})

    return Annotated[str, AfterValidator(check),
                     WithJsonSchema({"type": "string", "enum": allowed})]


class _NewExperiment(Closed):
    design: Literal["interleaving"] = Field(
        "interleaving", description='the default; "ab" is an A/B test on a placement '
        "(NewABExperiment)")
    name: Name
    rankers: Annotated[list[RankerIn], Field(min_length=2, max_length=MAX_RANKERS)]
    seed: Int(ge=0, le=MAX_SEED) | None = Field(
        None, description="default: drawn at random")
    # its size (one row and column per ranker) is checked with the rankers, which names it
    true_preferences: Annotated[
        list[Annotated[list[Annotated[float, Field(ge=0, le=1)]],
                       Field(min_length=1, max_length=MAX_RANKERS)]],
        Field(min_length=1, max_length=MAX_RANKERS)] | None = Field(
        None, description="simulations only: the true K×K preference matrix over `rankers` "
                          "(p_ij + p_ji = 1), for the true-regret metric")
    true_best: RankerName | None = Field(
        None, description="the ranker true regret is measured against (default: the "
                          "Condorcet winner of true_preferences); needs true_preferences")
    probe: bool = Field(True, description=PROBE)
    dwell_unsatisfied_s: Annotated[float, Field(gt=0, le=3600)] | None = Field(
        None, description="off by default: a click whose user came back to the results "
                          "within this many seconds (the dwell rankduel.js reports) is "
                          "an unsatisfied click and does not count")
    segments: Segments | None = Field(
        None, description=f"optional: up to {MAX_DIMENSIONS} dimensions of up to "
        f"{MAX_VALUES} values each, e.g. {{\"device\": [\"mobile\", \"desktop\"]}}; a "
        "search names its values with segment.<dimension>=<value> (an undeclared or absent "
        "value counts as `other`, which is reserved) and W is kept per value beside the "
        "total (docs/segments-and-export.md)")

    metrics: Metrics | None = Field(
        None, description=f"optional: up to {MAX_METRICS} metrics each with its own W and "
        "verdict, e.g. [{\"name\": \"click\"}, {\"name\": \"revenue\", \"action\": "
        "\"purchase\", \"value\": \"sum\", \"window_s\": 86400}] (docs/conversions.md)")
    primary: Annotated[str, Field(pattern=NAME_PATTERN)] | None = Field(
        None, description="the metric the policy learns from (default click): W is that "
                          "metric's, and with another metric each attributed event of it "
                          "is one comparison for the policy; needs metrics")

    placement: PlacementName | None = Field(
        None, description="the placement (search box) it takes traffic from; needs traffic")
    traffic: Traffic | None = Field(None, description=TRAFFIC_DOC + "; needs placement")
    guardrails: Guardrails | None = Field(  # type: ignore[valid-type]
        None, description="guardrail thresholds it changes (docs/operations/rollout.md)")

    def params_dict(self) -> dict[str, Any]:
        """The parameters as given (absent ones take the policy's defaults)."""
        return self.params.model_dump(exclude_none=True)


def _experiment_model(algorithm: str) -> type[_NewExperiment]:
    cls = bandits.get_algorithm(algorithm)
    params = _params_model(algorithm)
    title = "".join(p.title() for p in algorithm.split("_"))
    # δ of the verdicts, for a policy that states them at one (service.experiments.error_rates)
    delta = {"error_rate": (Annotated[float, Field(gt=0, le=0.5)], Field(
        0.05, description="δ: the chance, over the whole run, that a verdict the report "
        "states is wrong (the certified best ranker is not the best, or the best is shown "
        "worse)"))} if "error_rate" in cls.PARAMS else {}
    return create_model(
        f"New{title}Experiment", __base__=_NewExperiment, **delta,
        algorithm=(Literal[algorithm], ...),
        params=(params, Field(default_factory=params)),
        interleaving=(_interleaving_for(algorithm, cls.multi), ...),
    )


class NewExperiment(RootModel):
    """``POST /experiments``: one shape per algorithm."""

    #: the field that picks the shape (pydantic prefixes error locations with its value)
    discriminator: ClassVar[str] = "algorithm"

    root: Annotated[Union[tuple(_experiment_model(a) for a in bandits.ALGORITHMS)],  # noqa: UP007
                    Field(discriminator="algorithm")]
