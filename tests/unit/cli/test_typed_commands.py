"""Every command body takes typed parameters (one arguments object, or Typer's own), never ``**options``; the
arguments object of :func:`urbandp._cli_spec.typed_command` carries the declared options as the model or as given."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.testing import CliRunner

from urbandp._cli_spec import OptionsOf, command
from urbandp._release_options import ReleaseOptions, option
from urbandp.cli import build_app


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for name, sub in getattr(group, "commands", {}).items():
        found += _commands(sub, (*path, name)) if hasattr(sub, "commands") else [((*path, name), sub)]
    return found


COMMANDS = _commands(typer.main.get_command(build_app()))


def test_every_command_body_takes_typed_parameters_and_no_keyword_bag() -> None:
    assert len(COMMANDS) == 38
    for path, cmd in COMMANDS:
        body = inspect.unwrap(cmd.callback)  # past the error guard and the typed command to the body itself
        code = body.__code__
        assert not code.co_flags & inspect.CO_VARKEYWORDS, f"{' '.join(path)} takes **{code.co_varnames[-1]}"
        parameters = inspect.signature(body, follow_wrapped=False, eval_str=True).parameters.values()
        assert all(p.annotation is not inspect.Parameter.empty for p in parameters), path


class _Spec(ReleaseOptions):
    epsilon: float = option(1.0, help="Epsilon.", gt=0)
    box: tuple[float, float] = option((0.0, 1.0), help="Two numbers.", cli_type=str, cli_default="0,1")
    word: str = option("a", help="A word.", choices=("a", "b"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Arguments:
    data: Annotated[Path, typer.Argument(help="A file.")]
    spec: Annotated[
        _Spec, OptionsOf(leave_out=("word",), parse={"box": lambda t: tuple(map(float, t.split(",")))})
    ]
    given: Annotated[dict[str, Any], OptionsOf(_Spec, only=("word",))]
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace.")] = False


def test_typed_command_builds_the_model_of_its_options_and_keeps_others_as_given(tmp_path: Path) -> None:
    app = typer.Typer()
    seen: list[_Arguments] = []

    @command(app, _Arguments, "run")
    def body(a: _Arguments) -> None:
        seen.append(a)

    app.command("other")(lambda: None)  # two commands: Typer keeps the names
    data = tmp_path / "x.csv"
    data.write_text("a\n")
    res = CliRunner().invoke(app, ["run", str(data), "--epsilon", "2", "--box", "3,4.5", "--word", "b"])
    assert res.exit_code == 0, res.output
    (a,) = seen
    assert a.data == data and a.overwrite is False
    assert a.spec == _Spec(epsilon=2.0, box=(3.0, 4.5)) and a.given == {"word": "b"}
    bad = CliRunner().invoke(app, ["run", str(data), "--epsilon", "0"])
    assert (
        bad.exit_code == 2 and "urbandp: error: --epsilon must be a finite number > 0, got 0.0" in bad.output
    )
