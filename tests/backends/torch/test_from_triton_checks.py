"""``from_triton`` names what it cannot carry over and what it cannot take (issue 44, item 13).

Configs here are duck-typed (``kwargs``, ``num_warps``, ``pre_hook``), as ``from_triton`` reads
them, so these run without triton installed.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_autotune import from_triton
from pytest_autotune.backends.torch.triton_configs import PLUGIN_FIXTURES
from pytest_autotune.warning_types import AutotuneWarning


def _config(kwargs: dict[str, Any], **options: Any) -> SimpleNamespace:
    return SimpleNamespace(
        kwargs=kwargs, num_warps=4, num_stages=None, num_ctas=None, maxnreg=None, **options
    )


def test_a_pre_hook_that_is_dropped_is_named_in_a_warning() -> None:
    configs = [_config({"BLOCK": 64}), _config({"BLOCK": 128}, pre_hook=lambda args: None)]
    with pytest.warns(
        AutotuneWarning, match=r"config 1 \(BLOCK=128\) has a pre_hook, which is not carried over"
    ):
        declaration = from_triton(configs)
    # num_warps stays at triton.Config's default (4) in both: it is not declared (issue 44 item 7)
    assert set(declaration) == {"BLOCK", "restrictions"}


def test_configs_without_hooks_warn_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from_triton([_config({"BLOCK": 64}, pre_hook=None, post_hook=None)])


@pytest.mark.parametrize("name", ["torch_device", "autotune"])
def test_a_config_keyword_named_like_a_fixture_is_refused(name: str) -> None:
    with pytest.raises(
        ValueError, match=f"config keyword '{name}' has the name of the plugin's fixture {name}"
    ):
        from_triton([{"BLOCK": 64, name: 1}])


def test_the_refused_names_are_the_plugins_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    listed = pytester.runpytest("--fixtures", "-v", "-p", "no:cacheprovider").stdout.lines
    ours = {
        line.split()[0]
        for line in listed
        if "pytest_autotune" in line
        and line
        and not line.startswith((" ", "-"))
        and not line.split()[0].startswith("_")
    }
    assert ours == PLUGIN_FIXTURES
