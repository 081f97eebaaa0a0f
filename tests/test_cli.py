"""The ``rgbt`` command tree: every verb of ``rgbt.cli.VERBS`` is registered, every verb and
subcommand answers ``--help`` with exit 0, command groups without a subcommand exit 2 with their
usage, and a verb module that fails to import is an error (never a silently absent verb).

The tree is walked in-process through :func:`rgbt.cli.build_parser`; one subprocess checks the real
entry point (``python -m rgbt``).
"""

from __future__ import annotations

import argparse

import pytest

import rgbt.cli as cli
from helpers import run_rgbt
from rgbt.errors import MissingCapability

#: the command groups (verbs with subcommands) this checkout has; the walk below finds the rest
GROUPS = ("seg", "sensors", "engine", "image", "bag", "calib", "vio", "bench", "service")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """name -> parser of the subcommands of ``parser`` ({} when it has none)."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update(action.choices)
    return out


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path below ``parser`` (``("seg",)``, ``("seg", "eval")``, ...), depth first."""
    paths = []
    for name, child in _subparsers(parser).items():
        paths.append(path + (name,))
        paths.extend(_walk(child, path + (name,)))
    return paths


PARSER = cli.build_parser()
COMMANDS = _walk(PARSER)


def _main(argv: list[str]) -> int:
    """``rgbt.cli.main(argv)`` as the process would exit (argparse's SystemExit included)."""
    try:
        return cli.main(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1


def test_every_verb_is_registered_in_order() -> None:
    verbs = _subparsers(PARSER)
    assert list(verbs) == list(cli.VERBS)  # none missing, none extra, in the listed order
    assert len(verbs) == 16


@pytest.mark.parametrize("verb", list(cli.VERBS))
def test_verb_module_imports_and_registers_its_parser(verb: str) -> None:
    """Each verb module imports (a third-party extra may be absent: then the verb exits 3 naming it)
    and its parser is the module's own, not the stand-in of an unavailable verb."""
    module = cli.import_optional(cli.VERBS[verb])
    if isinstance(module, MissingCapability):
        assert _main([verb]) == 3
        return
    assert callable(module.register)
    parser = _subparsers(PARSER)[verb]
    own = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert own, f"rgbt {verb} registered no arguments or subcommands"


def test_the_groups_have_subcommands() -> None:
    for group in GROUPS:
        subs = _subparsers(_subparsers(PARSER)[group])
        assert len(subs) >= 2, (group, list(subs))


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_of_every_verb_and_subcommand_exits_0(path: tuple[str, ...], capsys: pytest.CaptureFixture) -> None:
    assert _main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: rgbt {' '.join(path)}"), out[:200]


def test_walk_covers_the_subcommands() -> None:
    # a floor under the tree's size: losing a whole group's subcommands must fail here too
    assert len(COMMANDS) >= len(cli.VERBS) + 30, COMMANDS


@pytest.mark.parametrize("group", GROUPS)
def test_group_without_subcommand_exits_2_with_usage(group: str, capsys: pytest.CaptureFixture) -> None:
    assert _main([group]) == 2
    err = capsys.readouterr().err
    assert f"usage: rgbt {group}" in err


def test_no_verb_exits_2_and_unknown_verb_fails(capsys: pytest.CaptureFixture) -> None:
    assert _main([]) == 2
    assert "usage: rgbt" in capsys.readouterr().err
    assert _main(["no-such-verb"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_verb_module_that_fails_to_import_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.VERBS, "broken", "rgbt.cli._no_such_verb_module")
    with pytest.raises(ImportError):
        cli.build_parser()


def test_real_entry_point_lists_every_verb() -> None:
    proc = run_rgbt("--help")
    assert proc.stdout.startswith("usage: rgbt")
    for verb in cli.VERBS:
        assert f"    {verb} " in proc.stdout or f"    {verb}\n" in proc.stdout, verb
    assert run_rgbt("no-such-verb", check=False).returncode == 2
