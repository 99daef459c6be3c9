"""Every code block in the docs (and the README) runs.

Rules, applied to fenced blocks in order, per Markdown file, in a fresh
working directory:

* ```` ```python ```` blocks are executed (one namespace per file), with the
  working directory first on ``sys.path`` as in ``python`` started there; the
  CLI commands get no such help (plug-ins must be found as documented);
* ```` ```console ```` lines starting with ``$ energysched`` and ```` ```bash ````
  lines starting with ``energysched`` are run with click's ``CliRunner`` and
  must exit with status 0; in console blocks, the output lines shown after a
  command must appear in its output unless the block elides output with ``...``;
  ``energysched demo`` runs with ``--quick --workers 1`` added (the full demo
  takes minutes); other shell commands (``pip``, ``dask``) are not run;
* ``<!-- docs-test: file NAME -->`` on the line before a block writes the
  block to ``NAME`` instead (so later commands can use it);
* ``<!-- docs-test: skip ... -->`` before a block skips it (expensive or
  needs a cluster/download); say why in the comment;
* ``<!-- docs-test: output -->`` before a block makes it the output the
  previous ``python`` block must print, line for line (trailing spaces aside).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").rglob("*.md")) + [p for p in [ROOT / "README.md"] if p.exists()]
FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|output|file\s+(\S+))\b.*-->\s*$")


def extract_blocks(text: str) -> list[tuple[str, str, str | None, str | None]]:
    """``(lang, code, action, filename)`` for every fenced block; action is ``skip``,
    ``output``, ``file`` or None."""
    blocks = []
    lines = text.splitlines()
    i = 0
    last_nonblank = ""
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            lang = m.group(1).lower()
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            marker = MARKER.match(last_nonblank.strip())
            action = filename = None
            if marker:
                action = marker.group(1).split()[0]
                filename = marker.group(2)
            blocks.append((lang, "\n".join(body) + "\n", action, filename))
            last_nonblank = ""
        elif lines[i].strip():
            last_nonblank = lines[i]
        i += 1
    return blocks


def _commands(lang: str, code: str) -> list[tuple[str, list[str], bool]]:
    """``(command, expected output lines, output elided)`` of the energysched commands of a shell block."""
    out: list[tuple[str, list[str], bool]] = []
    if lang == "console":
        current: tuple[str, list[str], bool] | None = None
        for line in code.splitlines():
            if line.startswith("$ "):
                current = (line[2:].strip(), [], False)
                out.append(current)
            elif current is not None and line.strip():
                if line.strip() == "..." or "..." in line:
                    out[-1] = (current[0], current[1], True)
                    current = out[-1]
                else:
                    current[1].append(line.strip())
    else:
        out = [
            (line.strip(), [], True)
            for line in code.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    return [c for c in out if c[0].split()[0] == "energysched"]


def _run_cli(command: str, expected: list[str], elided: bool) -> None:
    from energysched.cli import main

    args = shlex.split(command, comments=True)[1:]
    if args and args[0] == "demo" and "--quick" not in args:
        args += ["--quick", "--workers", "1"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, f"{command}\n{result.output}"
    if not elided:
        for line in expected:
            assert line in result.output, f"{command}: expected {line!r} in\n{result.output}"


@pytest.mark.parametrize("doc", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_code_blocks_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    before = set(sys.modules)
    ran = 0
    printed: str | None = None  # what the last python block printed
    try:
        for lang, code, action, filename in extract_blocks(doc.read_text(encoding="utf-8")):
            if action == "skip":
                continue
            if action == "output":
                assert printed is not None, f"{doc.name}: an output block without a python block"
                shown = [line.rstrip() for line in code.strip().splitlines()]
                now = [line.rstrip() for line in printed.strip().splitlines()]
                assert shown == now, (
                    f"{doc.name}: the output shown is not what the python block prints now; "
                    "update the doc to:\n" + "\n".join(now)
                )
                continue
            if action == "file":
                assert filename is not None
                Path(filename).write_text(code, encoding="utf-8")
                continue
            if lang == "python":
                # like `python` started in this folder; the CLI must find the
                # folder's plug-ins on its own (energysched.cli.importpath)
                sys.path.insert(0, str(tmp_path))
                out = io.StringIO()
                try:
                    with contextlib.redirect_stdout(out):
                        exec(compile(code, f"{doc.name}:python-block", "exec"), namespace)
                finally:
                    sys.path.remove(str(tmp_path))
                printed = out.getvalue()
                ran += 1
            elif lang in ("console", "bash", "sh", "shell"):
                for command, expected, elided in _commands(lang, code):
                    _run_cli(command, expected, elided)
                    ran += 1
    finally:
        for name in set(sys.modules) - before:  # modules the doc wrote (my_predictors, ...)
            module = sys.modules.get(name)
            if module is not None and str(getattr(module, "__file__", "") or "").startswith(
                str(tmp_path)
            ):
                del sys.modules[name]


def test_marker_parsing() -> None:
    text = "<!-- docs-test: file a.toml -->\n```toml\nx = 1\n```\n\n<!-- docs-test: skip (slow) -->\n```console\n$ energysched demo\n```\n```python\nprint(1)\n```\nprints\n\n<!-- docs-test: output -->\n```text\n1\n```\n"
    blocks = extract_blocks(text)
    assert [(b[0], b[2], b[3]) for b in blocks] == [
        ("toml", "file", "a.toml"),
        ("console", "skip", None),
        ("python", None, None),
        ("text", "output", None),
    ]
    assert _commands("console", "$ energysched report x\nreport: y\n$ pip install z\n") == [
        ("energysched report x", ["report: y"], False)
    ]
