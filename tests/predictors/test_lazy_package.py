"""The predictors package loads its names on first use: building a policy (what a
sweep's parent process does to check an experiment) imports no solver stack."""

from __future__ import annotations

from tests.fresh_python import fresh_python


def test_building_a_predictor_driven_policy_imports_no_scipy():
    code = (
        "import sys\n"
        "from policies.registry import get_policy\n"
        "get_policy('easy-energy-bsld-off')\n"
        "print(sorted(m for m in ('scipy', 'predictors.adept', 'predictors.auto') if m in sys.modules))\n"
    )
    assert fresh_python(code) == "[]"


def test_names_resolve_on_first_use():
    import predictors
    from predictors.adept import AdeptPredictor

    assert predictors.AdeptPredictor is AdeptPredictor
    assert "AdeptPredictor" in dir(predictors)
    try:
        predictors.NoSuchPredictor  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchPredictor" in str(exc)
    else:  # pragma: no cover - the assertion that matters
        raise AssertionError("an unknown name must raise AttributeError")


def test_the_replay_predictors_import_no_scipy():
    """ADEPT, fluid and their composite (the predictor-driven replays' default) fit
    their Amdahl and power models without SciPy (an import of about 0.25 s of CPU
    time in every replay); SciPy loads where a solver needs it (e.g. LBM)."""
    code = (
        "import sys\n"
        "import predictors.adept, predictors.composite, predictors.dvfs, predictors.job_length\n"
        "from predictors.baselines import fit_amdahl\n"
        "import numpy as np\n"
        "fit_amdahl(np.array([1.0, 2.0, 4.0]), np.array([3.0, 2.0, 1.5]))\n"
        "print('scipy' in sys.modules)\n"
    )
    assert fresh_python(code) == "False"
