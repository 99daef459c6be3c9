"""Sanity checks for the measured-curve corpus (pandas only).

Usage: python check.py   (exit status 0 = all checks passed)
"""

import math
import re
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parents[2] / "predictors" / "data" / "corpus"
SCALING_COLS = ["curve_id", "application", "system", "unit", "size", "runtime_s", "source_id"]
DVFS_COLS = ["curve_id", "application", "device", "freq_mhz", "time_s", "power_w", "source_id"]
MIN_POINTS = 5

errors = []


def err(msg):
    errors.append(msg)
    print("FAIL:", msg)


def positive_finite(df, col, name):
    vals = pd.to_numeric(df[col], errors="coerce").astype(float)
    ok = vals.apply(lambda x: math.isfinite(x) and x > 0)
    bad = df[~ok]
    if len(bad):
        err(
            f"{name}: {len(bad)} rows with non-finite or non-positive {col} "
            f"(first: {bad.iloc[0].to_dict()})"
        )


def check_table(path, cols, xcol, ycols):
    df = pd.read_csv(path)
    name = path.name
    if list(df.columns) != cols:
        err(f"{name}: columns {list(df.columns)} != {cols}")
        return df
    if df.isna().any().any():
        err(f"{name}: empty cells in columns {list(df.columns[df.isna().any()])}")
    for c in [xcol, *ycols]:
        positive_finite(df, c, name)
    dup = df.duplicated(["curve_id", xcol])
    if dup.any():
        err(f"{name}: {dup.sum()} duplicated ({'curve_id'}, {xcol}) pairs")
    for cid, g in df.groupby("curve_id", sort=True):
        n = g[xcol].nunique()
        if n < MIN_POINTS:
            err(f"{name}: curve {cid} has only {n} distinct {xcol} values")
        for c in ("application", "source_id") + (
            ("unit", "system") if "unit" in cols else ("device",)
        ):
            if g[c].nunique() != 1:
                err(f"{name}: curve {cid} mixes several values of {c}")
    return df


scal = check_table(HERE / "scaling.csv", SCALING_COLS, "size", ["runtime_s"])
dvfs = check_table(HERE / "dvfs.csv", DVFS_COLS, "freq_mhz", ["time_s", "power_w"])

if "unit" in scal.columns:
    bad_units = set(scal["unit"]) - {"nodes", "cores"}
    if bad_units:
        err(f"scaling.csv: unknown units {bad_units}")

# every source_id must be documented in SOURCES.md as a heading "## <source_id>"
sources_md = (HERE / "SOURCES.md").read_text()
documented = set(re.findall(r"^##+\s+`?([A-Za-z0-9_.\-]+)`?\s*$", sources_md, flags=re.M))
for df, name in ((scal, "scaling.csv"), (dvfs, "dvfs.csv")):
    if "source_id" in df.columns:
        missing = sorted(set(df["source_id"]) - documented)
        if missing:
            err(f"{name}: source_id(s) not documented in SOURCES.md: {missing}")

# ---------------- report ----------------
pd.set_option("display.width", 200)
pd.set_option("display.max_rows", 500)
pd.set_option("display.max_colwidth", 60)
if {"curve_id", "size", "runtime_s"} <= set(scal.columns):
    s = scal.groupby("curve_id").agg(
        unit=("unit", "first"),
        n=("size", "nunique"),
        smin=("size", "min"),
        smax=("size", "max"),
        t_at_min=("runtime_s", "first"),
        t_at_max=("runtime_s", "last"),
        source=("source_id", "first"),
    )
    s["span"] = s["smax"] / s["smin"]
    print("\n=== strong-scaling curves ===")
    print(s.to_string())
    print(
        f"\nscaling: {len(scal)} rows, {scal.curve_id.nunique()} curves, "
        f"{scal.source_id.nunique()} sources, {scal.system.nunique()} systems; "
        f"curves spanning >= 8x: {(s['span'] >= 8).sum()}"
    )
if {"curve_id", "freq_mhz"} <= set(dvfs.columns):
    d = dvfs.groupby("curve_id").agg(
        device=("device", "first"),
        n=("freq_mhz", "nunique"),
        fmin=("freq_mhz", "min"),
        fmax=("freq_mhz", "max"),
        source=("source_id", "first"),
    )
    print("\n=== DVFS curves ===")
    print(d.to_string())
    per_dev = d.groupby("device").size()
    print("\nDVFS curves per device:\n" + per_dev.to_string())
    n_rtx = d.index.str.startswith("rtx8000/").sum()
    print(
        f"\ndvfs: {len(dvfs)} rows, {dvfs.curve_id.nunique()} curves "
        f"({n_rtx} rtx8000 + {dvfs.curve_id.nunique() - n_rtx} others), "
        f"{dvfs.source_id.nunique()} sources"
    )

if errors:
    print(f"\n{len(errors)} check(s) FAILED")
    sys.exit(1)
print("\nall checks passed")
