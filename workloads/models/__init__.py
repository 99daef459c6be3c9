"""Ground-truth models (docs/background/models.md, section 1), vectorised over arrays of configurations.

* :mod:`~workloads.models.downey`: Downey's speedup model in ``n``;
* :mod:`~workloads.models.fluid`: the Fluid DVFS model in ``f``;
* :mod:`~workloads.models.composite`: Downey x Fluid, the default truth;
* :mod:`~workloads.models.hybrid`: the MPI+OpenMP queueing model in ``(n, c, f)``;
* :mod:`~workloads.models.pareto`: the time-energy Pareto filter.
"""

from __future__ import annotations

from workloads.models.composite import composite_energy, composite_power, composite_runtime
from workloads.models.downey import (
    downey_max_useful_nodes,
    downey_runtime,
    downey_speedup,
    downey_working_set,
)
from workloads.models.fluid import (
    fluid_calibrate,
    fluid_energy_factor,
    fluid_optimal_pstate,
    fluid_optimal_x,
    fluid_power,
    fluid_root,
    fluid_runtime_factor,
)
from workloads.models.hybrid import (
    DEFAULT_MAX_WAIT_FACTOR,
    HybridApp,
    HybridPower,
    HybridResult,
    hybrid_evaluate,
    hybrid_message_rate,
    hybrid_pareto_configs,
    hybrid_power_figures,
    mg1_waiting_time,
)
from workloads.models.pareto import pareto_front

__all__ = [
    "DEFAULT_MAX_WAIT_FACTOR",
    "HybridApp",
    "HybridPower",
    "HybridResult",
    "composite_energy",
    "composite_power",
    "composite_runtime",
    "downey_max_useful_nodes",
    "downey_runtime",
    "downey_speedup",
    "downey_working_set",
    "fluid_calibrate",
    "fluid_energy_factor",
    "fluid_optimal_pstate",
    "fluid_optimal_x",
    "fluid_power",
    "fluid_root",
    "fluid_runtime_factor",
    "hybrid_evaluate",
    "hybrid_message_rate",
    "hybrid_pareto_configs",
    "hybrid_power_figures",
    "mg1_waiting_time",
    "pareto_front",
]
