"""The flashsim pytest plugin (entry point pytest11, active once the package is installed).

A test taking the `flashsim_case` fixture runs once per case of a golden suite, one test id per case name:

    @pytest.mark.flashsim(unsupported=["softcap", "varlen"])   # optional: skip cases with these features
    def test_my_kernel(flashsim_case):
        q, k, v = flashsim_case.inputs("q", "k", "v", like=torch.empty(0, device="cuda"))
        o, lse = my_kernel(q, k, v, **flashsim_case.kwargs())
        flashsim_case.verify(o=o, lse=lse)

Options: --flashsim-suite NAME|PATH (default: the marker's suite=, else smoke), --flashsim-filter REGEX (case
names, re.search), --flashsim-shard I/N (every N-th case from the I-th; with --flashsim-shard-by variant, the
cases a kernel likely compiles as one variant together), --flashsim-time N
(flashsim_case.timed(fn) times N more calls: the median is the case's time), --flashsim-time-lock FILE (the
timed calls hold an exclusive lock on FILE: processes that share a GPU, e.g. shards compiling their cases at
once, take their timings one at a time), --flashsim-record FILE (a JSON line
per case: kernel, suite, case, outcome, reason, the worst error as a fraction of its bound, seconds;
`bench/gpu/run.py table peers FILE` makes the kernel x suite table). Features a kernel can declare unsupported
are Case.features' names, the dtype names and
rows_without_keys. The marker's ops= (default ["attention"]) names the ops the test's kernel computes: cases of
another op (a suite mixing attention and norm cases, as default does) are skipped with the reason:

    @pytest.mark.flashsim(suite="norm", ops=["rmsnorm"])
    def test_my_rmsnorm(flashsim_case): ...
"""
from __future__ import annotations

import json
import math
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
    group.addoption("--flashsim-shard", default=None, metavar="I/N",
                    help="only every N-th case from the I-th (0-based): N processes share a suite")
    group.addoption("--flashsim-shard-by", choices=["index", "variant"], default="index",
                    help="how --flashsim-shard deals the cases: 'index' (default) every N-th; 'variant' the cases a "
                         "JIT-compiling kernel likely builds one variant for (op, dtype, head dims, ALiBi, window, "
                         "softcap, sinks, KV cache) to one shard, largest group first to the shard with the fewest "
                         "cases: shards then compile different variants at once")
    group.addoption("--flashsim-time", type=int, default=0, metavar="N",
                    help="flashsim_case.timed(fn) calls fn N more times and keeps the median (default 0: once)")
    group.addoption("--flashsim-time-lock", default=None, metavar="FILE",
                    help="the timed calls hold an exclusive lock on FILE (created if missing): processes sharing a "
                         "GPU time one at a time while their first calls (compiles) run at once")
    group.addoption("--flashsim-record", default=None, metavar="FILE",
                    help="append a JSON line per case (kernel, suite, case, outcome, reason, worst error / bound, "
                         "seconds) to FILE")


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
    shard = metafunc.config.getoption("flashsim_shard")
    if shard:
        try:
            i, n = (int(x) for x in shard.split("/"))
            if not 0 <= i < n:
                raise ValueError
        except ValueError:
            raise pytest.UsageError(f"--flashsim-shard: '{shard}': expected I/N with 0 <= I < N") from None
        cases = cases[i::n] if metafunc.config.getoption("flashsim_shard_by") == "index" else \
            _variant_shard(cases, i, n)
    metafunc.parametrize("flashsim_case", cases, ids=[c.name for c in cases], indirect=True)


def _variant(case: Any) -> tuple:
    """What a kernel that compiles per variant likely specializes on, from the case file's header alone (no tensor
    is read): op, dtype, head dims, ALiBi, a window, softcap, sinks, a KV cache."""
    from .golden import read_header

    header = read_header(case.file)
    c = json.loads(header.get("__metadata__", {}).get("flashsim.case", "{}"))
    return (case.op, c.get("dtype", ""), c.get("head_dim", 0), c.get("head_dim_v", c.get("head_dim", 0)),
            "alibi_slopes" in header, c.get("window_left", -1) >= 0 or c.get("window_right", -1) > 0,
            bool(c.get("softcap", 0.0)), "sinks" in header, "k_cache" in header)


def _variant_shard(cases: list, i: int, n: int) -> list:
    """Shard i of n with each variant's cases together: the groups, largest first (then by key, so that every
    shard computes the same deal), each to the shard holding the fewest cases so far; the suite's order kept."""
    groups: dict = {}
    for case in cases:
        groups.setdefault(_variant(case), []).append(case)
    load, mine = [0] * n, set()
    for key in sorted(groups, key=lambda k: (-len(groups[k]), repr(k))):
        to = min(range(n), key=lambda s: (load[s], s))
        load[to] += len(groups[key])
        if to == i:
            mine.update(c.name for c in groups[key])
    return [c for c in cases if c.name in mine]


@pytest.fixture
def flashsim_case(request: Any) -> Any:
    """One golden case (flashsim.golden.Case) of the suite the plugin parametrizes over."""
    case = request.param
    case.last_report, case.seconds = None, None
    case.time_repeats = request.config.getoption("flashsim_time")
    case.time_lock = request.config.getoption("flashsim_time_lock")
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


def _features(case: Any) -> list[str]:
    """The case's features, rows_without_keys included (a failure's first suspect)."""
    return sorted(case.features | ({"rows_without_keys"} if case.has_feature("rows_without_keys") else set()))


def _kernel_name(item: Any) -> str:
    """The kernel a record is of: the marker's kernel=, else the test's name without test_, with its
    parameters other than the case (test_sdpa[flash-...] -> sdpa-flash)."""
    marker = item.get_closest_marker("flashsim")
    name = marker.kwargs.get("kernel") if marker else None
    name = name or item.originalname.removeprefix("test_")
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "-".join([name] + [str(v) for k, v in params.items() if k != "flashsim_case"])


def _outcome(report: Any) -> tuple[str, str]:
    """(pass | fail | skip | error, the reason's first line) of a test phase's report."""
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return "skip", reason.removeprefix("Skipped: ")
    if report.passed:
        return "pass", ""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash else str(report.longrepr)
    failed_verify = report.when == "call" and message.startswith(("VerificationError", "flashsim.golden"))
    return ("fail" if failed_verify else "error"), message.strip().splitlines()[0][:300] if message else ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    path = item.config.getoption("flashsim_record")
    case = getattr(getattr(item, "callspec", None), "params", {}).get("flashsim_case")  # set before the fixture runs
    if not path or case is None:
        return
    report = outcome.get_result()
    # One record a case: the setup's when it skipped or failed there, else the call's.
    if report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    state, reason = _outcome(report)
    verified = case.last_report
    if state == "fail" and verified is not None:
        reason = "; ".join(f"{o.name}: {o.note}" for o in verified.outputs.values() if not o.passed)
    worst = verified.worst_fraction if verified is not None else float("nan")
    record = {"kernel": _kernel_name(item), "suite": case.suite, "case": case.name, "outcome": state,
              "reason": reason, "worst_fraction": None if math.isnan(worst) else worst,
              "outputs": sorted(verified.outputs) if verified is not None else [],
              "seconds": case.seconds, "features": _features(case) if state != "error" else []}
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
