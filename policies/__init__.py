"""Scheduling policies: queue order, backfilling, size/frequency choice, power management.

Public names (see each module's docstring):

* :class:`QueuePolicy` (ordering + backfilling + chooser + power cap),
  :class:`RigidChooser`, :class:`PredictiveChooser`, :class:`Chooser`;
* the contract: :class:`Policy`, :class:`Decision`, :class:`QueuedJob`,
  :class:`RunningJob`, :class:`ClusterView`, :func:`validate_decision`;
* the registry: :func:`get_policy`, :func:`list_policies`;
* oracle twins: :func:`oracle_twin`, :func:`regret`, :func:`prediction_mape`;
* conformance: :func:`energysched.testing.check_policy` (it runs the engine, so it lives above it).
"""

from __future__ import annotations

from policies.backfilling import Profile, QueuePolicy, reservation
from policies.base import (
    ClusterView,
    Decision,
    Policy,
    QueuedJob,
    RunningJob,
    validate_decision,
)
from policies.choosers import Chooser, PredictiveChooser, RigidChooser, pareto_front
from policies.factories import build_policy
from policies.oracle import oracle_twin, prediction_mape, regret
from policies.ordering import ORDERINGS
from policies.registry import get_policy, list_policies

__all__ = [
    "ORDERINGS",
    "Chooser",
    "ClusterView",
    "Decision",
    "Policy",
    "PredictiveChooser",
    "Profile",
    "QueuePolicy",
    "QueuedJob",
    "RigidChooser",
    "RunningJob",
    "build_policy",
    "get_policy",
    "list_policies",
    "oracle_twin",
    "pareto_front",
    "prediction_mape",
    "regret",
    "reservation",
    "validate_decision",
]
