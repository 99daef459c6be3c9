"""``energysched policies list``: built-in and plug-in policies with their parameters."""

from __future__ import annotations

import json
from typing import Any

import click


def register(main: click.Group, groups: dict[str, Any]) -> None:
    """Add ``list`` to the ``policies`` group."""
    group = groups["policies"]

    @group.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def list_cmd(as_json: bool) -> None:
        """Built-in and plug-in (entry point) policies with their parameters and defaults.

        \b
        Any package.module:Class (or factory) also works as --policy.
        """
        from policies.registry import list_policies

        items = list_policies()
        if as_json:
            click.echo(json.dumps(items, indent=2, default=repr))
            return
        shared = shared_params([i for i in items if i["source"] == "builtin"])
        width = max(len(i["name"]) for i in items)
        for item in items:
            click.echo(f"{item['name']:<{width}}  [{item['source']}] {item['doc']}")
            own = {
                k: v
                for k, v in item["params"].items()
                if item["source"] != "builtin" or k not in shared
            }
            if own:
                params = ", ".join(f"{k}={v!r}" for k, v in own.items())
                click.echo(f"{'':<{width}}    params: {params}")
        if shared:
            click.echo("")
            click.echo(
                "Parameters every built-in policy takes (defaults; set with --param KEY=VALUE):"
            )
            for key, value in shared.items():
                click.echo(f"  {key}={value!r}")


def shared_params(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Parameters that every item has with the same default (printed once, not per policy)."""
    if not items:
        return {}
    first = items[0]["params"]
    return {
        key: value
        for key, value in first.items()
        if all(key in i["params"] and i["params"][key] == value for i in items[1:])
    }
