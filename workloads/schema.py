"""Column names, units and the in-memory form of a job trace.

The Standard Workload Format (SWF) of the Parallel Workloads Archive
(Feitelson, Tsafrir, Krakov, JPDC 2014) has 18 whitespace-separated fields per
job and ``;``-prefixed header comments. In memory a trace is a
:class:`Trace`: a pandas DataFrame with one row per job and the 18 fields as
columns (names carry their unit), plus the header facts.

Missing values: SWF writes ``-1`` for "unknown". We keep them as missing:
float columns hold ``NaN`` and integer columns use pandas' nullable ``Int64``
(``<NA>``), so ``-1`` never leaks into arithmetic. :func:`workloads.write_swf`
turns them back into ``-1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: the column names need no pandas
    import pandas as pd

#: The 18 SWF fields in file order: (column name, unit, kind, description).
#: kind "int" -> nullable Int64, "float" -> float64 (NaN for missing).
SWF_FIELDS: tuple[tuple[str, str, str, str], ...] = (
    ("job_id", "", "int", "job number, a counter starting at 1"),
    ("submit_s", "s", "float", "submit time, seconds since the log start"),
    ("wait_s", "s", "float", "time from submit to start"),
    ("runtime_s", "s", "float", "wall-clock time from start to end"),
    ("procs_alloc", "processors", "int", "number of allocated processors"),
    ("cpu_time_avg_s", "s", "float", "average CPU time used per processor"),
    ("memory_used_kb", "KB", "float", "average used memory per processor"),
    ("procs_req", "processors", "int", "requested number of processors"),
    ("time_req_s", "s", "float", "requested time (user runtime estimate)"),
    ("memory_req_kb", "KB", "float", "requested memory per processor"),
    ("status", "", "int", "1 completed, 0 failed, 5 cancelled, 2-4 partial"),
    ("user_id", "", "int", "user number"),
    ("group_id", "", "int", "group number"),
    ("executable_id", "", "int", "application (executable) number"),
    ("queue_id", "", "int", "queue number"),
    ("partition_id", "", "int", "partition number"),
    ("preceding_job_id", "", "int", "job this job depends on"),
    ("think_time_s", "s", "float", "think time from the preceding job"),
)

SWF_COLUMNS: tuple[str, ...] = tuple(f[0] for f in SWF_FIELDS)
INT_COLUMNS: tuple[str, ...] = tuple(f[0] for f in SWF_FIELDS if f[2] == "int")
FLOAT_COLUMNS: tuple[str, ...] = tuple(f[0] for f in SWF_FIELDS if f[2] == "float")


#: Hardware-counter columns every measured run (and benchmark measurement)
#: carries: median rates over the run, per node.
COUNTER_COLUMNS: tuple[str, ...] = (
    "ctr_instructions_per_s",  # retired instructions per second (per core), 1/s
    "ctr_llc_miss_ratio",  # last-level-cache misses per memory reference, 0..1
    "ctr_mem_bandwidth_gbs",  # memory bandwidth per node, GB/s
    "ctr_stall_ratio",  # stalled cycles / total cycles, 0..1
)

#: Columns of one measured run (what :func:`workloads.measurements.measure`
#: returns), in order. The predictors' runs table adds the job's identity and
#: trace fields around them (:data:`predictors.base.RUN_COLUMNS`).
MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "node_type",  # str
    "nodes",  # int, nodes the run used
    "cores",  # int, cores per node the run used
    "freq_ghz",  # float, frequency the run used
    "time_s",  # float, measured runtime (truth * (1 + noise))
    "power_w",  # float, measured mean power per node
    "energy_j",  # float, measured energy of the whole job
    *COUNTER_COLUMNS,
    "rapl_power_w",  # float, RAPL-like CPU package power per node
    "instructions",  # float, total retired instructions of the run (all nodes and cores):
    #                  proportional to the job's work, nearly independent of (n, f), noisy.
    #                  Lets a predictor compare runs of different jobs (inputs) of one application.
)

#: Columns of a runs table (one row per finished run): the job's identity,
#: the measurement and the job's trace fields. Predictors learn from these
#: (:attr:`predictors.base.Observations.runs`).
RUN_COLUMNS: tuple[str, ...] = (
    "job_id",  # int
    "application",  # int application id
    "submit_s",  # float, when the job was submitted (orders the stream)
    *MEASUREMENT_COLUMNS,
    "requested_nodes",  # int, from the trace
    "requested_time_s",  # float, from the trace (NaN when missing)
)

#: Columns of the platform's benchmark-suite measurements (LBM input):
#: one row per (benchmark, configuration).
BENCHMARK_COLUMNS: tuple[str, ...] = ("benchmark", *MEASUREMENT_COLUMNS)


@dataclass
class Trace:
    """A job trace: one row per job plus the header facts.

    Attributes:
        jobs: DataFrame with the columns of :data:`SWF_COLUMNS` (and possibly
            extra columns added by later steps, e.g. ``application``).
        header: header facts from ``; Key: value`` lines. Known numeric facts
            (``MaxNodes``, ``MaxProcs``, ``UnixStartTime``, ``MaxJobs``,
            ``MaxRecords``, ``TimeZone``, ``MaxRuntime``, ...) are parsed to
            ``int`` when the value starts with a number (``"338 (batch
            partition; 512 total)"`` -> ``338``), the full text is kept under
            ``header_text[key]``.
        header_text: every header value as the raw text (repeated keys such as
            ``Queue`` are joined with newlines).
        header_lines: the comment lines verbatim, so :func:`write_swf` keeps them.
        name: short name (file stem without ``.swf``/``.swf.gz``).
        path: where it was read from, if anywhere.
        bad_lines: number of data lines skipped with ``skip_bad_lines=True``.
        bad_line_errors: the first errors of skipped lines (messages).
    """

    jobs: pd.DataFrame
    header: dict[str, Any] = field(default_factory=dict)
    header_text: dict[str, str] = field(default_factory=dict)
    header_lines: list[str] = field(default_factory=list)
    name: str = "trace"
    path: str | None = None
    bad_lines: int = 0
    bad_line_errors: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def max_nodes(self) -> int | None:
        """``MaxNodes`` from the header, or ``None``."""
        value = self.header.get("MaxNodes")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` from the header (falls back to ``MaxNodes``), or ``None``."""
        value = self.header.get("MaxProcs", self.header.get("MaxNodes"))
        return int(value) if isinstance(value, (int, float)) else None

    def copy(self) -> Trace:
        return Trace(
            jobs=self.jobs.copy(),
            header=dict(self.header),
            header_text=dict(self.header_text),
            header_lines=list(self.header_lines),
            name=self.name,
            path=self.path,
            bad_lines=self.bad_lines,
            bad_line_errors=list(self.bad_line_errors),
        )
