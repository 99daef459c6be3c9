"""Split-up analysis: the LBM algebra read as a description (docs/background/models.md, section 2.1).

* the norm of a surrogate ``x`` says how demanding the program is (in
  "benchmark units");
* the cosine similarity of two surrogates says whether two programs (or one
  program at two input sizes) exercise the machine alike: the same program at
  another input size has cosine ~1 and a norm that scales with the input;
* a benchmark *row* of a platform (one resource on one configuration, one
  entry per benchmark) places the platform: comparing two platforms' rows,
  the norm ratio is the efficiency (smaller time norm = faster) and the angle
  is the architectural difference (0 when one is uniformly faster).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd


def splitup_norm(x: np.ndarray, ord: float = 2) -> float:
    """Norm of a surrogate (how demanding the program is, in benchmark units)."""
    return float(np.linalg.norm(np.asarray(x, dtype=float), ord))


def cosine_similarity(x: np.ndarray, y: np.ndarray) -> float:
    """``x . y / (|x| |y|)`` (NaN when either is zero)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    den = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / den) if den > 0 else math.nan


def angle_degrees(x: np.ndarray, y: np.ndarray) -> float:
    """Angle between two vectors, degrees."""
    c = cosine_similarity(x, y)
    return math.degrees(math.acos(max(-1.0, min(1.0, c)))) if np.isfinite(c) else math.nan


def similarity_matrix(surrogates: Mapping[object, np.ndarray]) -> pd.DataFrame:
    """Pairwise cosine similarities of named surrogates (applications, input sizes)."""
    names = list(surrogates)
    mat = np.array(
        [[cosine_similarity(surrogates[a], surrogates[b]) for b in names] for a in names]
    )
    return pd.DataFrame(mat, index=names, columns=names)


def splitup_table(
    surrogates: Mapping[object, np.ndarray], benchmark_names: list[str] | None = None
) -> pd.DataFrame:
    """One row per surrogate: the weights, their norm, and the dominant benchmark."""
    names = list(surrogates)
    if not names:
        return pd.DataFrame()
    width = len(np.asarray(surrogates[names[0]]))
    cols = benchmark_names or [f"b{i}" for i in range(width)]
    rows = []
    for n in names:
        x = np.asarray(surrogates[n], dtype=float)
        rows.append(
            {
                **dict(zip(cols, x, strict=True)),
                "norm": splitup_norm(x),
                "dominant": cols[int(np.argmax(np.abs(x)))],
            }
        )
    return pd.DataFrame(rows, index=names)


def benchmark_rows(benchmarks: pd.DataFrame, resource: str = "time_s") -> pd.DataFrame:
    """The rows of ``A``: one per configuration ``(node_type, nodes, cores, freq_ghz)``, one column per benchmark."""
    return benchmarks.pivot_table(
        index=["node_type", "nodes", "cores", "freq_ghz"],
        columns="benchmark",
        values=resource,
        aggfunc="mean",
    )


def compare_platform_rows(
    bench_a: pd.DataFrame,
    bench_b: pd.DataFrame,
    resource: str = "time_s",
    config_a: tuple | None = None,
    config_b: tuple | None = None,
) -> dict[str, float]:
    """Compare one benchmark row of platform A with one of platform B.

    ``config_*``: ``(node_type, nodes, cores, freq_ghz)``; default each
    platform's smallest node count at its top frequency and full cores.
    Only benchmarks measured on both count. Returns ``norm_a``, ``norm_b``,
    ``efficiency`` (``norm_a / norm_b``: > 1 means B needs less of the
    resource, e.g. is faster), ``cosine`` and ``angle_deg`` (architectural
    difference, 0 = B is A scaled).
    """
    ra, rb = benchmark_rows(bench_a, resource), benchmark_rows(bench_b, resource)
    common = [c for c in ra.columns if c in rb.columns]
    if not common:
        raise ValueError("the two benchmark tables share no benchmark")

    def pick(rows: pd.DataFrame, cfg: tuple | None) -> np.ndarray:
        if cfg is None:
            idx = rows.index.to_frame(index=False)
            first = idx["node_type"].iloc[0]
            sub = idx[idx["node_type"] == first]
            sub = sub[sub["cores"] == sub["cores"].max()]
            sub = sub[sub["nodes"] == sub["nodes"].min()]
            cfg = tuple(sub.sort_values("freq_ghz").iloc[-1])
        return rows.loc[cfg, common].to_numpy(dtype=float)

    va, vb = pick(ra, config_a), pick(rb, config_b)
    na, nb = splitup_norm(va), splitup_norm(vb)
    return {
        "norm_a": na,
        "norm_b": nb,
        "efficiency": na / nb if nb > 0 else math.nan,
        "cosine": cosine_similarity(va, vb),
        "angle_deg": angle_degrees(va, vb),
        "benchmarks": float(len(common)),
    }


__all__ = [
    "angle_degrees",
    "benchmark_rows",
    "compare_platform_rows",
    "cosine_similarity",
    "similarity_matrix",
    "splitup_norm",
    "splitup_table",
]
