"""``scripts/check_architecture.py`` fails on what it says it fails on (a planted tree), and passes on the project."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_architecture", ROOT / "scripts" / "check_architecture.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_architecture", module)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    for package in ("accounts", "kb", "pipeline"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


KB = {"kb/services.py": "def upload_check(): pass\ndef _upload_check(): pass\n__version__ = '1'\n"}


def test_the_project_passes(checker):
    assert checker.check() == []


@pytest.mark.parametrize(
    ("source", "private"),
    [
        ("from kb.services import _upload_check\n", "kb.services._upload_check"),
        ("from kb.services import upload_check, _upload_check as check\n", "kb.services._upload_check"),
        ("from kb import services\nservices._upload_check()\n", "kb.services._upload_check"),
        ("import kb.services as s\ns._upload_check()\n", "kb.services._upload_check"),
        ("def later():\n    from kb.services import _upload_check\n", "kb.services._upload_check"),
    ],
    ids=["from-import", "aliased", "module-attribute", "import-as-attribute", "inside-a-function"],
)
def test_a_private_name_of_another_package_fails(checker, tmp_path, source, private):
    root = _tree(tmp_path, {**KB, "pipeline/preview.py": source})
    problems = checker.check(root)
    assert problems and all("pipeline/preview.py" in p for p in problems), problems
    assert any(f"takes the private name {private} of another package" in p for p in problems), problems


def test_public_names_dunders_and_a_packages_own_private_names_pass(checker, tmp_path):
    root = _tree(tmp_path, {
        **KB,
        "pipeline/preview.py": "from kb.services import upload_check, __version__\nfrom kb import services\n"
                               "services.upload_check()\n",
        "kb/apis.py": "from kb.services import _upload_check\n",  # the same package: its own helpers
    })
    assert checker.check(root) == []


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("kb/retrieval.py", "from kb.expansion import Piece\n"),
        ("kb/expansion.py", "def later():\n    from kb import retrieval\n"),
    ],
    ids=["retrieval-imports-expansion", "expansion-imports-retrieval"],
)
def test_retrieval_and_expansion_importing_each_other_fails(checker, tmp_path, path, source):
    other = "kb/expansion.py" if path == "kb/retrieval.py" else "kb/retrieval.py"
    root = _tree(tmp_path, {other: "class Piece: pass\n", path: source})
    problems = checker.check(root)
    assert len(problems) == 1 and path in problems[0] and "kept apart" in problems[0], problems
