"""Policies used by the experiment tests as ``es_experiments_plugins:NAME`` plug-ins."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from policies.backfilling import QueuePolicy
from policies.base import Policy


class CrashOncePolicy(QueuePolicy):
    """EASY, except that the first run to start kills its whole process (a hard crash).

    The crash happens when ``marker`` does not exist yet (it is created first),
    so the re-run after the "crash" goes through.
    """

    def __init__(self, marker: str = "", **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)
        self.marker = marker

    def setup(self, platform: Any, rng: Any = None, **context: Any) -> None:
        if self.marker and not Path(self.marker).exists():
            Path(self.marker).write_text("crashed once\n")
            os._exit(17)
        super().setup(platform, rng, **context)


class FailingPolicy(QueuePolicy):
    """EASY that raises while ``marker`` does not exist (then behaves as EASY)."""

    def __init__(self, marker: str = "", **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)
        self.marker = marker

    def setup(self, platform: Any, rng: Any = None, **context: Any) -> None:
        if not self.marker or not Path(self.marker).exists():
            raise RuntimeError("deliberate failure for the tests")
        super().setup(platform, rng, **context)


class StartsNothingPolicy(Policy):
    """A plug-in that never starts a job: every job ends rejected ("never started").

    Its platform only idles, so its energy is far below any real schedule's: the
    comparison must flag it (it completed no job), not headline its "saving".
    """

    name = "starts-nothing"

    def schedule(self, view: Any) -> list[Any]:
        return []


class UnsavablePolicy(QueuePolicy):
    """EASY whose ``params()`` holds a set, which JSON cannot hold."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "tags": {"a", "b"}}


class HtmlErrorPolicy(QueuePolicy):
    """EASY that fails with markup in its error message."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)

    def setup(self, platform: Any, rng: Any = None, **context: Any) -> None:
        raise RuntimeError("<img src=x onerror=alert(1)> [click](http://evil.example) *boom*")


class SigkillPolicy(QueuePolicy):
    """EASY whose setup kills its own process with SIGKILL (as the OOM killer would)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)

    def setup(self, platform: Any, rng: Any = None, **context: Any) -> None:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


class HangingPolicy(QueuePolicy):
    """EASY whose setup never returns (a plug-in stuck in a loop)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(backfill="easy", name="easy", **kwargs)

    def setup(self, platform: Any, rng: Any = None, **context: Any) -> None:
        import time

        while True:
            time.sleep(0.05)
