"""Typed models of every record labrecord stores (see docs/design.md, run directory)."""
from labrecord.models.events import (
    EVENT_TYPES, OPP_BOUND_TYPES, BaseEvent, Choice, Confirm, Dwell, EpisodeEnd, EpisodeStart,
    Event, Failure, Geometry, InterventionEvent, Opportunity, Recovery, StateReport, Validity,
    Violation,
)
from labrecord.models.manifest import (
    RUN_ID_PATTERN, RUN_SCHEMA, ActionSpec, Assets, Budget, Evaluation, HandoffCheck, Harness, Intervention,
    ObservationSpec, Physics, Population, RunManifest, Seeds, Source, Support, System, Task, check_run_id,
    condition_of,
)
from labrecord.models.operation import Operation
from labrecord.models.populations import (
    POPULATION_TYPES, Checkpoint, FixedStart, Instance, OraclePair, Pair, PopulationEntry,
)
from labrecord.models.preflight import Preflight
from labrecord.models.records import FinalScores, MetricValue, ObservationReceipt, OnlineScore

__all__ = [name for name in dir() if not name.startswith("_")]
