"""tools/make_private.py on a small repository: the modules move, every form of reference follows, a second run
changes nothing.

# make_private: skip  (this file names old modules on purpose: the tool must leave it as it is)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_private_under_test", ROOT / "tools" / "make_private.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOOL = _tool()

FILES = {
    "src/urbandp/__init__.py": '"""urbandp."""\n',
    "src/urbandp/errors.py": "class InputError(Exception):\n    pass\n",
    "src/urbandp/session.py": "class Session:\n    pass\n",
    "src/urbandp/privacy/__init__.py": "",
    "src/urbandp/privacy/noise.py": "def laplace():\n    pass\n",
    "src/urbandp/reports/__init__.py": "",
    "src/urbandp/reports/templates/map.html": "<html></html>\n",
    "src/urbandp/fleet/__init__.py": '__all__ = ["plan", "release"]\n',
    "src/urbandp/fleet/api.py": "def release():\n    pass\n",
    "src/urbandp/fleet/config.py": "class HatReleaseConfig:\n    pass\n",
    "src/urbandp/fleet/plan.py": "def plan_release():\n    pass\n",
    "src/urbandp/fleet/cli.py": "app = None\n",
    "src/urbandp/counts/__init__.py": "",
    "src/urbandp/counts/cli.py": "app = None\n",
    "src/urbandp/counts/domain.py": "class CountDomain:\n    pass\n",
    "tests/test_x.py": (
        "import importlib\n"
        "\n"
        "import urbandp.privacy.noise as noise\n"
        "from urbandp import session\n"
        "from urbandp.fleet import api, plan\n"
        "from urbandp.fleet import config as cfg\n"
        "from urbandp.fleet.config import HatReleaseConfig\n"
        "\n"
        'TARGET = "urbandp.fleet.api.release"\n'
        'CLI = [importlib.import_module(f"urbandp.{group}.cli") for group in ("fleet", "counts")]\n'
        'SOURCE = SRC / "fleet" / "plan.py"\n'
        "\n"
        "\n"
        "def f():\n"
        '    """See fleet/plan.py, fleet/api.release, privacy.noise, src/urbandp/session.py and\n'
        '    fleet/config.HatReleaseConfig; not synth/fleet.parquet, privacy.json or ud.fleet.release."""\n'
    ),
    "docs/api.md": "::: urbandp.fleet.api\n\n`fleet/config.py` reads `counts/domain.py`; `privacy/` draws. urbandp.fleet.plan.\n",
    "pyproject.toml": "[tool.ruff]\nline-length = 110\n[tool.setuptools.package-data]\n"
    'urbandp = ["py.typed", "reports/templates/*"]\n[tool.mypy]\nmodule = ["urbandp.privacy.noise", "urbandp.fleet.*"]\n',
    "Makefile": "demo:\n\tpython -m urbandp.session out\n",
    "CHANGELOG.md": "urbandp.fleet.config was renamed\n",
    "README.md": "```\n  privacy/     noise\n  fleet/       speeds\n```\n",
}

EXPECTED = {
    "tests/test_x.py": (
        "import importlib\n"
        "\n"
        "import urbandp._privacy.noise as noise\n"
        "from urbandp import _session as session\n"
        "from urbandp.fleet import _api as api\n"
        "from urbandp.fleet import _options as cfg\n"
        "from urbandp.fleet import plan\n"
        "from urbandp.fleet._options import HatReleaseConfig\n"
        "\n"
        'TARGET = "urbandp.fleet._api.release"\n'
        'CLI = [importlib.import_module(f"urbandp.{group}._cli") for group in ("fleet", "counts")]\n'
        'SOURCE = SRC / "fleet" / "_plan.py"\n'
        "\n"
        "\n"
        "def f():\n"
        '    """See fleet/_plan.py, fleet/_api.release, _privacy.noise, src/urbandp/_session.py and\n'
        '    fleet/_options.HatReleaseConfig; not synth/fleet.parquet, privacy.json or ud.fleet.release."""\n'
    ),
    "docs/api.md": "::: urbandp.fleet._api\n\n`fleet/_options.py` reads `counts/_domain.py`; `_privacy/` draws. "
    "urbandp.fleet.plan.\n",
    "pyproject.toml": "[tool.ruff]\nline-length = 110\n[tool.setuptools.package-data]\n"
    'urbandp = ["py.typed", "_reports/templates/*"]\n[tool.mypy]\nmodule = ["urbandp._privacy.noise", "urbandp.fleet.*"]\n',
    "Makefile": "demo:\n\tpython -m urbandp._session out\n",
    "CHANGELOG.md": "urbandp.fleet.config was renamed\n",  # history is not rewritten
    "README.md": "```\n  _privacy/    noise\n  fleet/       speeds\n```\n",  # the column stays in place
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "before"], cwd=tmp_path, check=True)
    return tmp_path


def test_the_table_says_what_each_module_becomes(repo: Path) -> None:
    table = TOOL.table_markdown(repo)
    assert "| `urbandp.fleet.config` | `urbandp.fleet._options` |" in table
    assert "| `urbandp.privacy` (package) | `urbandp._privacy` | internal |" in table
    assert "| `urbandp.session` | `urbandp._session` | internal |" in table
    assert "urbandp.errors" not in table and "| `urbandp.fleet` " not in table  # public: unchanged


def test_modules_move_and_every_reference_follows(repo: Path) -> None:
    said: list[str] = []
    TOOL.run(repo, say=said.append)
    for rel, text in EXPECTED.items():
        assert (repo / rel).read_text() == text, rel
    moved = subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, text=True).stdout
    assert "R  src/urbandp/fleet/config.py -> src/urbandp/fleet/_options.py" in moved
    assert (repo / "src/urbandp/_privacy/noise.py").exists() and not (repo / "src/urbandp/privacy").exists()
    assert (repo / "src/urbandp/_reports/templates/map.html").exists()
    assert (repo / "src/urbandp/errors.py").exists() and (repo / "src/urbandp/fleet/__init__.py").exists()
    assert "git mv src/urbandp/fleet/config.py src/urbandp/fleet/_options.py" in said


def test_a_second_run_changes_nothing(repo: Path) -> None:
    TOOL.run(repo, say=lambda _: None)
    second = TOOL.run(repo, say=lambda _: None)
    assert (second.moves, second.rewritten) == ([], {})
    assert TOOL.main(["--root", str(repo), "--check"]) == 0


def test_a_reference_merged_after_the_run_is_rewritten_by_a_second_run(repo: Path) -> None:
    TOOL.run(repo, say=lambda _: None)
    late = repo / "tests" / "test_late.py"
    late.write_text("from urbandp.fleet.config import HatReleaseConfig\n")
    assert TOOL.main(["--root", str(repo), "--check"]) == 1
    TOOL.run(repo, say=lambda _: None)
    assert late.read_text() == "from urbandp.fleet._options import HatReleaseConfig\n"


def test_a_new_name_already_taken_stops_the_run_before_any_change(repo: Path) -> None:
    (repo / "src/urbandp/fleet/_options.py").write_text("x = 1\n")  # a branch added it
    said: list[str] = []
    with pytest.raises(SystemExit, match="nothing changed"):
        TOOL.run(repo, say=said.append)
    assert "error: urbandp.fleet._options exists already: urbandp.fleet.config cannot take its name" in said
    assert (repo / "tests/test_x.py").read_text() == FILES["tests/test_x.py"]
    assert (repo / "src/urbandp/fleet/config.py").exists()
