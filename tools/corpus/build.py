"""Assemble scaling.csv and dvfs.csv from the transcribed raw tables in raw/.
Every number in raw/ was read from the public file named in SOURCES.md."""

from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
RAW = HERE / "raw"
# the corpus ships as package data; the shared RTX 8000 file sits beside the repository
OUT = HERE.parents[1] / "predictors" / "data" / "corpus"
SHARED_DVFS = HERE.parents[2] / "shared" / "data" / "dvfs" / "rtx8000_dvfs.csv"

# ---------------- strong scaling ----------------
parts = [pd.read_csv(RAW / f) for f in ("scaling_raw.csv",)]
cols = ["curve_id", "application", "system", "unit", "size", "runtime_s", "source_id"]
for f in ("scaling_raw2.csv", "scaling_raw3.csv"):
    parts.append(pd.read_csv(RAW / f, names=cols, header=None))
gol = pd.read_csv(RAW / "gol_hummingbird.csv")
gol_rows = pd.DataFrame(
    {
        "curve_id": "game-of-life-mpi/hummingbird/" + gol["impl"] + "_2048sq_300steps",
        "application": "MPI Game of Life 2048x2048 300 steps (" + gol["impl"] + " decomposition)",
        "system": "cluster named hummingbird in the source path (2 nodes; Open MPI 5.0.5; 1 rank per core)",
        "unit": "cores",
        "size": gol["np"],
        "runtime_s": gol["median_s"],
        "source_id": "najar-hpc-parallel-systems-gol",
    }
)
parts.append(gol_rows)
scal = pd.concat(parts, ignore_index=True)[cols]
scal["size"] = scal["size"].astype(int)
scal = scal.sort_values(["curve_id", "size"], kind="stable")
scal.to_csv(OUT / "scaling.csv", index=False)

# ---------------- DVFS ----------------
dcols = ["curve_id", "application", "device", "freq_mhz", "time_s", "power_w", "source_id"]


def dvfs_curves(
    table: pd.DataFrame, *, prefix: str, app: str, device: str, freq: str, time_ms: str, source: str
) -> pd.DataFrame:
    """One device's measured curves in the corpus's columns: ``table[app]`` names
    the benchmark, ``table[freq]`` the core clock (MHz), ``table[time_ms]`` its
    time in milliseconds."""
    return pd.DataFrame(
        {
            "curve_id": prefix + "/" + table[app],
            "application": table[app],
            "device": device,
            "freq_mhz": table[freq],
            "time_s": table[time_ms] / 1000.0,
            "power_w": table["power_w"],
            "source_id": source,
        }
    )


out = [
    # RTX 8000 (project's copy); its 'time_s' column holds per-kernel times in ms
    dvfs_curves(
        pd.read_csv(SHARED_DVFS),
        prefix="rtx8000",
        app="benchmark",
        device="NVIDIA Quadro RTX 8000 (mem 6500 MHz)",
        freq="core_mhz",
        time_ms="time_s",
        source="wang-chu-icpads2018",
    ),
    # V100, 10 core clocks, mem 877 MHz
    dvfs_curves(
        pd.read_csv(RAW / "v100_dvfs_real.csv"),
        prefix="v100",
        app="benchmark",
        device="NVIDIA Tesla V100 (mem 877 MHz)",
        freq="core_mhz",
        time_ms="time",
        source="nv-dvfs-benchmark-v100",
    ),
    # P100, 5 core clocks, mem 715 MHz
    dvfs_curves(
        pd.read_csv(RAW / "p100_dvfs_real_mem715.csv"),
        prefix="p100",
        app="app",
        device="NVIDIA Tesla P100 (mem 715 MHz)",
        freq="coreF",
        time_ms="time_ms",
        source="nv-dvfs-benchmark-p100",
    ),
    # RTX 2070 SUPER, 5 core clocks at the base memory clock 6300 MHz
    dvfs_curves(
        pd.read_csv(RAW / "gtx2070s_mem6300.csv"),
        prefix="rtx2070s",
        app="app",
        device="NVIDIA GeForce RTX 2070 SUPER (mem 6300 MHz)",
        freq="coreF",
        time_ms="time_ms",
        source="mei-tpds2021-gpu-dvfs",
    ),
]
dv = pd.concat(out, ignore_index=True)[dcols]
dv["freq_mhz"] = dv["freq_mhz"].astype(int)
dv = dv.sort_values(["curve_id", "freq_mhz"], kind="stable")
dv.to_csv(OUT / "dvfs.csv", index=False, float_format="%.12g")
print("scaling rows", len(scal), "curves", scal.curve_id.nunique())
print("dvfs rows", len(dv), "curves", dv.curve_id.nunique())
