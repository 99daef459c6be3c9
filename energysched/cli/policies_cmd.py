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
        width = max(len(i["name"]) for i in items)
        for item in items:
            click.echo(f"{item['name']:<{width}}  [{item['source']}] {item['doc']}")
            params = ", ".join(f"{k}={v!r}" for k, v in item["params"].items())
            if params:
                click.echo(f"{'':<{width}}    params: {params}")
