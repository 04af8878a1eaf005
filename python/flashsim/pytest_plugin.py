"""The flashsim pytest plugin (entry point pytest11, active once the package is installed).

A test taking the `flashsim_case` fixture runs once per case of a golden suite, one test id per case name:

    @pytest.mark.flashsim(unsupported=["softcap", "varlen"])   # optional: skip cases with these features
    def test_my_kernel(flashsim_case):
        q, k, v = flashsim_case.inputs("q", "k", "v", like=torch.empty(0, device="cuda"))
        o, lse = my_kernel(q, k, v, **flashsim_case.kwargs())
        flashsim_case.verify(o=o, lse=lse)

Options: --flashsim-suite NAME|PATH (default: the marker's suite=, else smoke), --flashsim-filter REGEX (case
names, re.search). Features a kernel can declare unsupported are Case.features' names, the dtype names and
rows_without_keys. The marker's ops= (default ["attention"]) names the ops the test's kernel computes: cases of
another op (a suite mixing attention and norm cases, as default does) are skipped with the reason:

    @pytest.mark.flashsim(suite="norm", ops=["rmsnorm"])
    def test_my_rmsnorm(flashsim_case): ...
"""
from __future__ import annotations

from typing import Any

import pytest

DEFAULT_SUITE = "smoke"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("flashsim", "flashsim golden suites")
    group.addoption("--flashsim-suite", default=None, metavar="NAME|PATH",
                    help=f"golden suite for flashsim_case: a built-in name, a suite folder or a spec file "
                         f"(default: {DEFAULT_SUITE})")
    group.addoption("--flashsim-filter", default=None, metavar="REGEX",
                    help="only the cases whose name matches (re.search)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "flashsim(suite=None, unsupported=(), ops=('attention',)): the golden suite of a flashsim_case test, the "
        "case features its kernel does not support and the ops it computes (other cases are skipped with the "
        "reason)")
    config._flashsim_suites = {}


def pytest_unconfigure(config: Any) -> None:
    for suite in getattr(config, "_flashsim_suites", {}).values():
        for case in suite:
            case.release()
    config._flashsim_suites = {}


def _suite(config: Any, name: str) -> Any:
    from .golden import Suite

    cache = config._flashsim_suites
    if name not in cache:
        try:
            cache[name] = Suite(name)
        except ValueError as e:
            raise pytest.UsageError(f"--flashsim-suite: {e}") from None
    return cache[name]


def pytest_generate_tests(metafunc: Any) -> None:
    if "flashsim_case" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("flashsim")
    name = metafunc.config.getoption("flashsim_suite") or (marker.kwargs.get("suite") if marker else None) \
        or DEFAULT_SUITE
    suite = _suite(metafunc.config, str(name))
    try:
        cases = suite.select(metafunc.config.getoption("flashsim_filter"))
    except ValueError as e:
        raise pytest.UsageError(f"--flashsim-filter: {e}") from None
    metafunc.parametrize("flashsim_case", cases, ids=[c.name for c in cases], indirect=True)


@pytest.fixture
def flashsim_case(request: Any) -> Any:
    """One golden case (flashsim.golden.Case) of the suite the plugin parametrizes over."""
    case = request.param
    try:
        marker = request.node.get_closest_marker("flashsim")
        ops = list(marker.kwargs.get("ops", ("attention",))) if marker else ["attention"]
        if case.op not in ops:
            pytest.skip(f"{case.name}: op {case.op}, the test checks {', '.join(ops)}")
        unsupported = list(marker.kwargs.get("unsupported", ())) if marker else []
        missing = [f for f in unsupported if case.has_feature(f)]
        if missing:
            pytest.skip(f"{case.name}: the kernel does not support {', '.join(missing)}")
        yield case
    finally:
        case.release()  # one case's tensors in memory at a time
