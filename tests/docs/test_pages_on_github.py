"""The pages read on GitHub as on the site (issue 44): code shows inline, no directive shows raw.

GitHub renders ```` ```{literalinclude} ```` and ```` ```{toctree} ```` blocks as their raw text, so
the pages show their example code inline, between ``<!-- example:start docs/examples/FILE -->`` and
``<!-- example:end -->``, kept equal to the file here (the file is what ``test_examples.py`` runs),
and index.md writes its navigation as toctree comments that ``docs/conf.py`` makes toctrees.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
EXAMPLE = re.compile(
    r"<!-- example:start (\S+)[^\n]*-->\n```python\n(.*?)```\n<!-- example:end -->", re.DOTALL
)
#: Fenced MyST directives that GitHub would show as raw text (api.md's autodoc blocks, ``eval-rst``,
#: are allowed: they name the documented objects, and the page says where their text is).
RAW_ON_GITHUB = re.compile(r"^```\{(literalinclude|toctree|include)\}", re.MULTILINE)


def _shown() -> list[tuple[Path, str, str]]:
    return [
        (page, path, code)
        for page in PAGES
        for path, code in EXAMPLE.findall(page.read_text(encoding="utf-8"))
    ]


def test_no_page_uses_a_directive_that_github_shows_raw() -> None:
    raw = [
        f"{page.relative_to(ROOT)}: {m[0]}"
        for page in PAGES
        for m in RAW_ON_GITHUB.finditer(page.read_text())
    ]
    assert raw == []


def test_inline_examples_are_the_example_files() -> None:
    shown = _shown()
    assert {path for _, path, _ in shown} >= {
        "docs/examples/test_scale.py",
        "docs/examples/plain_matvec.py",
        "docs/examples/test_matvec.py",
    }
    for page, path, code in shown:
        assert code == (ROOT / path).read_text(encoding="utf-8"), f"{page.name} shows an old {path}"


def test_every_example_file_is_shown() -> None:
    assert {p.relative_to(ROOT).as_posix() for p in (DOCS / "examples").glob("*.py")} <= {
        path for _, path, _ in _shown()
    }


@pytest.fixture
def conf(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(DOCS))
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delitem(sys.modules, "gen_options", raising=False)
    return module


def test_the_index_navigation_becomes_hidden_toctrees_of_every_page(conf: ModuleType) -> None:
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    source = [text]
    conf._optional_guides(None, "index", source)
    blocks = re.findall(r"```\{toctree\}\n:caption: (\w+)\n:hidden:\n\n(.*?)```", source[0], re.DOTALL)
    assert [caption for caption, _ in blocks] == ["Start", "Reference", "Guides", "Background"]
    listed = {line for _, body in blocks for line in body.splitlines() if line}
    pages = {p.relative_to(DOCS).with_suffix("").as_posix() for p in PAGES} - {"index"}
    assert listed == pages
    linked = {link.removesuffix(".md") for link in re.findall(r"\]\(([\w/-]+\.md)\)", text)}
    assert linked == pages  # and a reader on GitHub sees a link to each
