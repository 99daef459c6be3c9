"""Compiled modules of energysched (everything else is declared in pyproject.toml).

Each module is a Cython source beside the Python code it speeds up, and each is
optional: ``pip install`` builds it when a C compiler is there, and without one
the install goes on and the Python code runs instead (the same results, slower).
Cython itself comes from ``[build-system] requires``.
"""

from setuptools import Extension, setup

#: module name -> its Cython source (add a compiled module here)
COMPILED_MODULES = {
    "policies._placement": "policies/_placement.pyx",
    "predictors._adept_kernels": "predictors/_adept_kernels.pyx",
    "predictors._dvfs_kernels": "predictors/_dvfs_kernels.pyx",
}

#: extra C compiler flags of a module: the ADEPT and DVFS kernels must give NumPy's
#: values bit for bit, so no fused multiply-adds (a compiler may contract ``a * b + c``
#: into one where the target CPU has them, e.g. with ``-march=native``)
EXTRA_COMPILE_ARGS = {
    "predictors._adept_kernels": ["-ffp-contract=off"],
    "predictors._dvfs_kernels": ["-ffp-contract=off"],
}

setup(
    ext_modules=[
        Extension(
            name, [source], optional=True, extra_compile_args=EXTRA_COMPILE_ARGS.get(name, [])
        )
        for name, source in COMPILED_MODULES.items()
    ]
)
