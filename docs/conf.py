"""Sphinx configuration of the documentation site (``docs/``), built strictly by ``.ci/run``:

    python -m pip install -c constraints.txt -e ".[docs]"
    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

Why Sphinx with MyST (Markdown) and Furo, rather than MkDocs with Material and mkdocstrings: both
build these Markdown pages and fail a strict build on a broken page link, a broken anchor and a
missing API object (tried on the same three faults), but Sphinx is the better-kept generator today:
MkDocs' last release (1.6.1) dates from August 2024 and Material for MkDocs is in maintenance mode,
while Sphinx, MyST and Furo release regularly. It is also the smaller install for CI (measured in a
fresh virtual environment: 97 MB and 44 s against 143 MB and 58 s, load average 3 to 11), and
``-W --keep-going`` reports every broken reference of a build at once instead of stopping at the
first. The API pages use autodoc, which imports the package: a name that no longer exists fails the
build.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_options  # noqa: E402  (docs/gen_options.py, beside this file)

if not gen_options.is_current():
    raise RuntimeError(f"{gen_options.PAGE} is stale: run `{gen_options.COMMAND}`")

project = "pytest-autotune"
author = "the pytest-autotune authors"
copyright = "the pytest-autotune authors"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# GitHub-style anchors for headings (`page.md#some-heading`), checked by the strict build
myst_heading_anchors = 3
myst_enable_extensions = ["deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "furo"
html_title = "pytest-autotune"

# -n (nitpicky) checks every cross-reference; these targets are outside what the site documents
# (no intersphinx: the build must not need the network) or internal array types
nitpick_ignore = [
    ("py:class", "abc.ABC"),
    ("py:class", "SpaceError"),  # build_space's docstring names it unqualified; documented on the API page
    ("py:class", "Points"),
    ("py:class", "pytest_autotune.space.base.Points"),
    ("py:mod", "pytest_autotune.space.conditions.bounds"),
]


#: Guides that other work adds; listed in index.md's Guides toctree once the page exists.
OPTIONAL_GUIDES = ("coming-from-triton", "scale-out")
OPTIONAL_MARK = "optional-guides-go-here"


#: index.md's navigation: ``<!-- toctree: Caption`` then one page per line, then ``-->``. A comment,
#: because GitHub shows a ```{toctree} block as raw text; the build turns it into a hidden toctree.
TOCTREE_COMMENT = re.compile(r"<!-- toctree: ([^\n]+)\n(.*?)-->\n", re.DOTALL)


def _toctrees(text: str) -> str:
    """``text`` with each toctree comment (:data:`TOCTREE_COMMENT`) made a hidden toctree."""
    return TOCTREE_COMMENT.sub(lambda m: f"```{{toctree}}\n:caption: {m[1]}\n:hidden:\n\n{m[2]}```\n", text)


def _optional_guides(app: object, docname: str, source: list[str]) -> None:
    """Make index.md's toctree comments toctrees (:func:`_toctrees`), and replace the mark in its
    Guides toctree by the optional guides that exist."""
    if docname == "index":
        present = "".join(f"{name}\n" for name in OPTIONAL_GUIDES if (HERE / f"{name}.md").exists())
        source[0] = _toctrees(source[0]).replace(f"{OPTIONAL_MARK}\n", present)


def _index_outdated(
    app: object, env: object, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """Read index.md in every build: which optional guides exist may have changed since the last."""
    return ["index"]


def setup(app: object) -> None:
    """Sphinx's hooks for this configuration."""
    app.connect("source-read", _optional_guides)  # type: ignore[attr-defined]
    app.connect("env-get-outdated", _index_outdated)  # type: ignore[attr-defined]
