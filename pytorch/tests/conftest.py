"""pytest set-up of the package's tests.

- The `cuda` marker: a test that needs a CUDA GPU is skipped, with that reason, where PyTorch sees none.
- The `checks` fixture (Checks, below): a test records many comparisons (a loop over dtypes, layouts,
  activations and forms) and fails with all of its failures in one message, or when it recorded
  none. The number of comparisons per module is printed at the end of the run.
- Under pytest-xdist, PyTorch's CPU threads are shared out among the workers.
- The `generator` fixture: a CUDA generator seeded with the module's SEED, fresh for every test, so a
  test's data do not depend on which tests ran before it.
The tests import the installed hardact_torch (python3 -m pip install --no-build-isolation ./pytorch),
never the source tree.
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import torch

# Under pytest-xdist each worker gets its share of the cores for PyTorch's CPU threads: N workers of a
# thread per core each made the CPU tests crawl on a 16-core GPU machine (past 240 s a test, -n 16).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // _WORKERS))

# checklib.py (comparison, test data), shared with the benchmarks and examples, lives in pytorch/common/.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "common"))

try:
    import hardact_torch  # noqa: F401
except ImportError as error:
    raise pytest.UsageError(
        f"hardact_torch is not installed or does not load ({error}). Install it from the repository root "
        "with: python3 -m pip install --no-build-isolation ./pytorch") from error


class Checks:
    """The comparisons one test makes: each record is a pass ('') or a failure's description. A test
    that takes the `checks` fixture fails (pytest_runtest_call below) when any record failed or when none was made,
    with every failure in one message: a loop over thousands of cases stays one test."""

    def __init__(self) -> None:
        self.passed = 0
        self.failures: list[str] = []

    def record(self, report: str, what: str) -> bool:
        """report '' is a pass; anything else is the failure's description."""
        if report:
            self.failures.append(f"{what}: {report}")
        else:
            self.passed += 1
        return not report

    def summary(self) -> str:
        return f"{self.passed} passed, {len(self.failures)} failed"


CHECKS = pytest.StashKey[Checks]()
COUNTS = pytest.StashKey[dict]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU visible to PyTorch (skipped without one)")
    config.stash[COUNTS] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; PyTorch sees none")
    for item in items:
        if item.get_closest_marker("cuda"):
            item.add_marker(skip)


@pytest.fixture
def checks(request: pytest.FixtureRequest) -> Checks:
    record = Checks()
    request.node.stash[CHECKS] = record
    return record


@pytest.fixture
def generator(request: pytest.FixtureRequest) -> torch.Generator:
    return torch.Generator(device="cuda").manual_seed(getattr(request.module, "SEED", 2026))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    __tracebackhide__ = True  # a failure shows its message, not this hook
    result = yield  # the test body; an exception it raises fails the test as usual
    record = item.stash.get(CHECKS, None)
    if record is not None:
        counts = item.config.stash[COUNTS].setdefault(item.path.name, [0, 0])
        counts[0] += record.passed
        counts[1] += len(record.failures)
        if record.failures:
            shown = "\n".join(record.failures[:40])
            more = f"\n... and {len(record.failures) - 40} more" if len(record.failures) > 40 else ""
            raise AssertionError(f"{len(record.failures)} of {record.passed + len(record.failures)} "
                                 f"comparisons failed:\n{shown}{more}")
        if record.passed == 0:
            raise AssertionError("the test made no comparison")
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its comparison counts to the controller, which prints them."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["hardact_comparisons"] = session.config.stash.get(COUNTS, {})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """pytest-xdist's controller: a worker's counts added to the run's."""
    counts = node.config.stash.setdefault(COUNTS, {})
    for module, (passed, failed) in getattr(node, "workeroutput", {}).get("hardact_comparisons", {}).items():
        total = counts.setdefault(module, [0, 0])
        total[0] += passed
        total[1] += failed


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    counts = config.stash.get(COUNTS, {})
    if counts:
        terminalreporter.write_line("comparisons: " + "; ".join(
            f"{module} {passed} passed, {failed} failed" for module, (passed, failed) in sorted(counts.items())))
