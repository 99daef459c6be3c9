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
}

setup(
    ext_modules=[
        Extension(name, [source], optional=True) for name, source in COMPILED_MODULES.items()
    ]
)
