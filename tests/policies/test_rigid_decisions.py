"""The ``rigid_decisions`` capability of choosers: a plug-in chooser (not a
:class:`~policies.choosers.RigidChooser`) that declares it gets the fast paths
of rigid scheduling, with the schedule of the built-in rigid chooser; one that
does not declare it is asked for every decision."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from policies.backfilling import QueuePolicy
from policies.base import Decision, planned_length_s
from policies.choosers import Chooser, RigidChooser
from tests.policies.replay_helpers import start_times, submitted_at_once


class _CountingRigid(Chooser):
    """A third-party chooser returning the trace's own choice, counting its calls."""

    name = "counting-rigid"

    def __init__(self, declare: bool) -> None:
        self.rigid_decisions = declare
        self.calls = 0

    def setup(self, platform, **context):
        super().setup(platform, **context)
        self._fmax = [t.fmax_ghz for t in platform.node_types]

    def choose(self, job, view):
        self.calls += 1
        return Decision(
            job,
            job.requested_nodes,
            self._fmax[job.node_type],
            job.node_type,
            None,
            planned_length_s(job),
        )


def test_the_rigid_chooser_declares_it_and_a_subclass_that_decides_otherwise_does_not():
    assert RigidChooser().rigid_decisions
    assert not Chooser.rigid_decisions

    class Halved(RigidChooser):
        def choose(self, job, view):
            d = super().choose(job, view)
            return dataclasses.replace(d, nodes=max(1, d.nodes // 2))

    assert not Halved().rigid_decisions

    class Reporting(RigidChooser):  # its cached decisions are its own business
        def decisions(self, jobs):
            return None

    assert not Reporting().rigid_decisions

    class Declared(Halved):
        rigid_decisions = True  # (a false declaration: taken at its word)

    assert Declared().rigid_decisions


@pytest.mark.parametrize("backfill", ["easy", "none"])
def test_a_declaring_plug_in_gets_the_rigid_single_partition_path(backfill):
    """EASY and FCFS on one partition build the decisions themselves: the declaring
    chooser is never asked, the other one is, and both schedules are the rigid one."""
    trace = submitted_at_once("SDSC-SP2-1998-4.2-cln.swf.gz", 300)
    want = start_times(trace, QueuePolicy(backfill=backfill))
    declared, plain = _CountingRigid(True), _CountingRigid(False)
    assert np.array_equal(
        start_times(trace, QueuePolicy(backfill=backfill, chooser=declared)), want
    )
    assert np.array_equal(start_times(trace, QueuePolicy(backfill=backfill, chooser=plain)), want)
    assert declared.calls == 0
    assert plain.calls >= 300


def test_a_declaring_plug_in_gets_the_bounded_conservative_scan():
    """Conservative backfilling on a long queue stops scanning once no job left could
    start now: the declaring chooser is asked for fewer decisions, same schedule."""
    trace = submitted_at_once("SDSC-SP2-1998-4.2-cln.swf.gz", 400)
    want = start_times(trace, QueuePolicy(backfill="conservative"))
    declared, plain = _CountingRigid(True), _CountingRigid(False)
    got = start_times(trace, QueuePolicy(backfill="conservative", chooser=declared))
    assert np.array_equal(got, want)
    assert np.array_equal(
        start_times(trace, QueuePolicy(backfill="conservative", chooser=plain)), want
    )
    assert 0 < declared.calls < 0.75 * plain.calls
