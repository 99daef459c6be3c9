"""A report's figures as PNG and SVG bytes, made side by side in forked processes.

A report has about ten figures; making one (building it, then drawing it twice,
once per format, with matplotlib's constrained layout) takes 0.1-1 s, most of a
report's time. :func:`render_figures` takes each figure as a *builder* (a
function of no arguments returning a matplotlib figure, or ``None`` for a
figure that has nothing to show) and returns the PNG and SVG bytes of each.

* **One layout per figure.** The PNG's draw runs the constrained layout; the
  SVG is then drawn with the axes where that layout put them (the figure's
  layout engine is switched off), instead of laying the figure out again.
* **Side by side.** On Linux, while this process runs no other thread (the
  condition of :func:`energysched.sweep.fork_context`), the builders run in
  worker processes forked from this one: they inherit the data the builders
  read, nothing is pickled but the bytes that come back. Elsewhere, with one
  CPU, or for a single figure, they run here, one after the other. The bytes
  are the same either way (PNG bytes exactly; SVG up to matplotlib's random
  element ids).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping
from typing import Any

from energysched.cpus import usable_cpus

log = logging.getLogger(__name__)

__all__ = ["FigureBuilder", "figure_bytes", "render_figures"]

#: Makes one figure (a :class:`matplotlib.figure.Figure`), or ``None`` when it has
#: nothing to show.
FigureBuilder = Callable[[], Any]

#: The builders of the figures being made by forked workers (set before the
#: workers fork, read by them: :func:`_build_and_render`).
_BUILDERS: Mapping[str, FigureBuilder] = {}


def figure_bytes(fig: Any) -> tuple[bytes, bytes]:
    """``(PNG, SVG)`` of ``fig``, laid out once (module docstring). Neither holds a
    date or a software version, so that a figure's files depend on its content only."""
    png = io.BytesIO()
    fig.savefig(png, format="png", metadata={"Software": None})
    fig.set_layout_engine("none")  # keep the axes where the PNG's layout put them
    svg = io.BytesIO()
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return png.getvalue(), svg.getvalue()


def _build_and_render(key: str) -> tuple[bytes, bytes] | None:
    fig = _BUILDERS[key]()
    return None if fig is None else figure_bytes(fig)


def render_figures(
    builders: Mapping[str, FigureBuilder], workers: int | None = None
) -> dict[str, tuple[bytes, bytes]]:
    """``{key: (PNG, SVG)}`` for each builder that returned a figure, in the order of
    ``builders`` (module docstring). ``workers``: at most this many forked processes
    (default: one per usable CPU); 1 makes every figure in this process.

    An exception raised by a builder or while drawing is raised here, as it would
    be in this process. A worker that dies (killed, out of memory) leaves the
    figures it had not sent back to this process, which makes them itself.
    """
    global _BUILDERS
    keys = list(builders)
    count = min(len(keys), usable_cpus() if workers is None else max(1, int(workers)))
    _BUILDERS = dict(builders)
    try:
        made = _made_in_workers(keys, count) if count > 1 else {}
        made.update({key: _build_and_render(key) for key in keys if key not in made})
    finally:
        _BUILDERS = {}
    return {key: files for key in keys if (files := made[key]) is not None}


def _made_in_workers(keys: list[str], count: int) -> dict[str, tuple[bytes, bytes] | None]:
    """What ``count`` workers forked from this process make of ``keys`` (none when
    this process may not fork now: :func:`energysched.sweep.fork_context`)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from energysched.sweep import fork_context

    ctx = fork_context()
    made: dict[str, tuple[bytes, bytes] | None] = {}
    if ctx is None:
        return made
    try:
        with ProcessPoolExecutor(max_workers=count, mp_context=ctx) as pool:
            futures = [(key, pool.submit(_build_and_render, key)) for key in keys]
            for key, future in futures:
                made[key] = future.result()
    except BrokenProcessPool as exc:
        left = [key for key in keys if key not in made]
        log.warning("a figure worker died (%s); making %s here", exc, ", ".join(left))
    return made
