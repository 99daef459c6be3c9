"""Run configuration: the knobs of one simulation that are not the policy's."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from energysched.errors import ConfigError

OverrunRule = Literal["kill", "let-run"]

#: Durations must stay below 2**53 s: beyond it a double cannot hold every
#: whole second, and a time plus a duration could overflow (as in SWF traces).
MAX_TIME_S = float(2**53)


@dataclass(frozen=True)
class RunConfig:
    """How the engine treats jobs and nodes.

    Attributes:
        overrun: what happens to a job whose true runtime exceeds its time
            limit (the requested time, or the limit a policy set):
            ``"kill"`` ends it at the limit with status ``killed``, as real
            batch systems do; ``"let-run"`` lets it finish (status
            ``completed``). Jobs without a requested time are never killed.
        kill_grace_s: extra seconds past the limit before a kill (real
            systems often allow a grace period).
        idle_timeout_s: switch an idle node off after this many seconds
            (``None``: never switch off).
        reserve_nodes: idle nodes per node type that power management keeps on.
        power_cap_w: platform power cap handed to the policy (``inf``: none).
            The engine reports the cap and its violations; respecting it is
            the policy's job.
        seed: seed of the run's random generator (measurement noise, policy
            randomness). Same inputs and seed give identical results.
        record_power: keep the power timeline (disable to save memory on huge runs).
        progress: show a progress bar (only when stderr is a terminal).
    """

    overrun: OverrunRule = "kill"
    kill_grace_s: float = 0.0
    idle_timeout_s: float | None = None
    reserve_nodes: int = 0
    power_cap_w: float = math.inf
    seed: int = 0
    record_power: bool = True
    progress: bool = False

    def __post_init__(self) -> None:
        for key in ("record_power", "progress"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(key, f"must be true or false, got {getattr(self, key)!r}")
        for key in ("kill_grace_s", "idle_timeout_s", "power_cap_w"):
            value = getattr(self, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                raise ConfigError(key, f"must be a number, got {value!r}")
        if self.overrun not in ("kill", "let-run"):
            raise ConfigError("overrun", f"must be 'kill' or 'let-run', got {self.overrun!r}")
        if not (0 <= self.kill_grace_s < MAX_TIME_S):
            raise ConfigError(
                "kill_grace_s",
                f"must be a number of seconds >= 0 and below 2**53, got {self.kill_grace_s!r}",
            )
        if self.idle_timeout_s is not None and not (0 <= self.idle_timeout_s < MAX_TIME_S):
            raise ConfigError(
                "idle_timeout_s",
                f"must be a number of seconds >= 0 and below 2**53, or None, "
                f"got {self.idle_timeout_s!r}",
            )
        if (
            isinstance(self.reserve_nodes, bool)
            or not isinstance(self.reserve_nodes, int)
            or self.reserve_nodes < 0
        ):
            raise ConfigError(
                "reserve_nodes", f"must be an integer >= 0, got {self.reserve_nodes!r}"
            )
        if not self.power_cap_w > 0:
            raise ConfigError(
                "power_cap_w", f"must be > 0 (use inf for no cap), got {self.power_cap_w!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError("seed", f"must be an integer >= 0, got {self.seed!r}")

    @classmethod
    def from_settings(cls, settings: dict[str, Any], **more: Any) -> RunConfig:
        """A config from engine settings as an experiment holds them (``[engine]``,
        a task's ``engine``), where ``power_cap_w = None`` is no cap; ``more``: other
        fields (the run's seed)."""
        fields_ = dict(settings)
        if fields_.get("power_cap_w", 0) is None:
            fields_["power_cap_w"] = math.inf
        return cls(**fields_, **more)

    def with_policy_settings(self, settings: dict[str, Any], policy: str) -> RunConfig:
        """This config with a policy's own engine settings (:func:`policy_settings`:
        idle timeout, reserved nodes, power cap).

        Raises:
            ConfigError: this config sets one of them to another value than the
                policy does (the policy's would silently win): set it once.
        """
        for key, value in settings.items():
            mine = getattr(self, key)
            if mine != _DEFAULTS[key] and mine != value:
                raise ConfigError(
                    key,
                    f"the run's engine settings give {key} = {mine!r} and policy {policy!r} "
                    f"gives {value!r}; set it once, as the policy's parameter {key}",
                )
        return replace(self, **settings) if settings else self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if math.isinf(d["power_cap_w"]):
            d["power_cap_w"] = None
        return d


def policy_settings(policy: Any) -> dict[str, Any]:
    """The engine settings ``policy`` sets itself: its ``run_config_overrides()`` (idle
    timeout, reserved nodes, power cap), or none."""
    overrides = getattr(policy, "run_config_overrides", None)
    return overrides() if overrides is not None else {}


#: each :class:`RunConfig` field's default (what "not set" means for it)
_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in fields(RunConfig) if f.default is not MISSING
}


def read_config_text(path: str | Path, *, what: str) -> str:
    """The UTF-8 text of a configuration file, or a :class:`ConfigError` saying what to fix.

    A missing file, a directory, an unreadable file and a file that is not
    UTF-8 (Latin-1 from an old editor) each give one line naming the file
    (and the line of the first bad byte). A UTF-8 byte-order mark is dropped.
    """
    p = Path(path)
    if p.is_dir():
        raise ConfigError("(file)", f"is a directory; give the path of the {what}", source=str(p))
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(
            "(file)", f"cannot read {what}: {exc.strerror or exc}", source=str(p)
        ) from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"line {line}",
            f"byte 0x{data[exc.start]:02x} is not UTF-8; save the {what} as UTF-8",
            source=str(p),
        ) from None
