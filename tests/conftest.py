"""Shared fixtures: the committed fixture runs and the installed console script."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
FIXTURE_RUNS = ["tiny", "calendar", "newest", "harbor", "harbor_csv"]

# Keep tests independent of a developer's ~/.cache: the cache goes to a folder of this process's (each xdist
# worker's), which its rlsql subprocesses share; tests that use a cache of their own point RLSQL_CACHE_DIR
# elsewhere. The cache stays in its default mode (auto: a fresh copy is read, nothing is built unasked).
os.environ["RLSQL_CACHE_DIR"] = tempfile.mkdtemp(prefix="rlsql-test-cache-")
for _name in ("RLSQL_CACHE", "RLSQL_FROM_LOGS", "RLSQL_ENGINE"):  # a developer's own choices stay out of the tests
    os.environ.pop(_name, None)

# Spark tests (tests/test_spark*.py) start short-lived local JVMs over tiny inputs, where compiling costs
# more than it saves: the JIT's first tier only (C1), with the code cache tiered compilation would get
# (C1 alone gets a smaller one, fills it within a run set, and the JVM then interprets everything), and
# the serial collector (bench/RESULTS.md); no whole-stage or expression code generation (Spark
# interprets the same expressions: the answers are the same, and Spark's own suites check that the two
# agree) and no adaptive re-planning. A user's session keeps Spark's defaults (rlsql/engine/spark.py).
SPARK_TEST_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseSerialGC"
# A 2 GB driver: with every object of the five fixture runs created and cached at once (test_spark's "all"),
# a 1 GB one spent its time in full collections (old generation at 99 %, 27 s of full GC in two minutes).
SPARK_TEST_CONF = (
    "spark.driver.memory=2g spark.sql.codegen.wholeStage=false "
    "spark.sql.codegen.factoryMode=NO_CODEGEN spark.sql.adaptive.enabled=false"
)
os.environ.setdefault("RLSQL_SPARK_JAVA_OPTIONS", SPARK_TEST_JAVA_OPTIONS)
os.environ.setdefault("RLSQL_SPARK_CONF", SPARK_TEST_CONF)

# hypothesis keeps no example database (it would write .hypothesis/ into the checkout, from every
# xdist worker at once); the property tests' seeds and example counts are their own
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("rlsql", database=None)
_hypothesis_settings.load_profile("rlsql")


@pytest.fixture(autouse=True)
def _process_left_as_found():
    """Each test leaves its worker process in the working folder it found (the next file's tests rely on it)."""
    folder = os.getcwd()
    yield
    assert os.getcwd() == folder, "the test left its worker in another working folder"


class FixtureConnections:
    """One rlsql connection (rlsql.engine.statements.open_connection: every view and macro, the small sources
    loaded once) per set of fixture runs, made when first asked for and shared by the whole session.

    The sets are each fixture run alone and "all" of them together. Tests that only read views through
    these (test_grain, test_column_docs) then pay for each set's sources once, not once per view.
    """

    SETS = (*FIXTURE_RUNS, "all")

    def __init__(self) -> None:
        self._open: dict = {}

    def __getitem__(self, label: str):
        if label not in self._open:
            import warnings

            from rlsql.engine.statements import open_connection
            from rlsql.runs.folders import resolve_runs

            names = FIXTURE_RUNS if label == "all" else [label]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a run lacking an artifact says so; nothing to check here
                self._open[label] = open_connection(resolve_runs([RUNS / n for n in names]))
        return self._open[label]

    def close(self) -> None:
        for con in self._open.values():
            con.close()


@pytest.fixture(scope="session")
def fixture_connections():
    connections = FixtureConnections()
    yield connections
    connections.close()


@pytest.fixture(scope="session")
def bound_columns(fixture_connections) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """view or query -> run set -> its (column, DuckDB type) pairs, bound with LIMIT 0 (no row read) on the
    session's connection per run set; a run set lacking what a view reads leaves that set out.

    The columns and types `rlsql describe` gives (test_column_docs checks that they agree), computed once
    for test_column_docs and test_schema instead of one connection per view and run set.
    """
    import duckdb

    from rlsql.catalog.catalog import load_catalog
    from rlsql.core.sqltext import identifier
    from tests.compare import result_columns

    found: dict[str, dict[str, list[tuple[str, str]]]] = {}
    names = [f.name for f in load_catalog().files.values() if f.kind in ("view", "query")]
    for label in FixtureConnections.SETS:
        con = fixture_connections[label]
        for name in names:
            try:
                cursor = con.execute(f"SELECT * FROM {identifier(name)} LIMIT 0")
            except duckdb.Error:
                continue  # the runs lack an artifact it reads: nothing to bind
            found.setdefault(name, {})[label] = result_columns(cursor)
    return found


@pytest.fixture(scope="session")
def tiny_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The markdown report of the tiny run, written once per session (test_report and test_golden read it)."""
    import warnings

    from rlsql.outputs.report import build_report
    from rlsql.runs.folders import resolve_runs

    out = tmp_path_factory.mktemp("tiny-report") / "report"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        build_report(resolve_runs([RUNS / "tiny"]), out)
    return out


@pytest.fixture
def export_clock(monkeypatch: pytest.MonkeyPatch):
    """A function that moves the clock rlsql.outputs.export stamps `rlsql.exported_at` with one second on: tests whose
    exports' stamps (whole seconds) must differ call it between the exports instead of sleeping a second
    (~5 s of a worker's wall time). The stamps are the real time from then on plus the seconds moved."""
    import datetime as dt
    import types

    import rlsql.outputs.export as export

    moved = dt.timedelta()

    class Clock(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return dt.datetime.now(tz) + moved

    monkeypatch.setattr(export, "dt", types.SimpleNamespace(**{**vars(dt), "datetime": Clock}))

    def tick() -> None:
        nonlocal moved
        moved += dt.timedelta(seconds=1)

    return tick


def refused_by_mode() -> list[str]:
    """A command prefix under which the kernel refuses a file or folder its mode refuses, whoever runs the tests:
    for root (CI), setpriv (util-linux) drops the two capabilities that let root read and list anything, as a
    container's dropped capabilities do; for any other user, nothing. Skips, saying why, for root without setpriv."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip(
            "running as root, and no setpriv (util-linux) to drop the capabilities that let root read "
            "any file: the kernel cannot be made to refuse one"
        )
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


@pytest.fixture(scope="session")
def runs_dir() -> Path:
    return RUNS


@pytest.fixture(scope="session")
def rlsql_exe() -> str:
    """The console script installed beside this interpreter (what a user runs)."""
    candidate = Path(sys.executable).parent / "rlsql"
    found = str(candidate) if candidate.exists() else shutil.which("rlsql")
    if not found:
        pytest.fail("the rlsql console script is not installed: pip install . first (see README)")
    return found


#: the test files that take longest (wall seconds on their worker in a whole-suite run, bench/RESULTS.md at
#: 9434c57, session 7), longest first. `pytest -n auto --dist loadfile` (README) hands a worker its next file when
#: the one it runs has two tests left, in the collection's order, so these start first and no worker begins
#: a long file while the other is finishing (greedy longest-first). test_spark.py (~3 minutes where pyspark
#: and Java are installed, an instant skip where not) leads. The Spark Connect test (~11 s, most of it its
#: server's JVM starting) takes its place by length: run last of all, it left the other worker idle for
#: its whole length at the end (session 6: the workers ended 11 s apart).
LONGEST_FIRST = [
    "test_spark.py",
    "test_report.py",
    "test_logcache.py",
    "test_fleet.py",
    "test_export_merge.py",
    "test_cache.py",
    "test_writes.py",
    "test_spark_connect.py",
    "test_rawlogs.py",
    "test_kill9.py",
    "test_shell.py",
    "test_column_docs.py",
    "test_queries.py",
    "test_adversarial.py",
    "test_turn_counts.py",
    "test_many_runs.py",
    "test_harbor_damage.py",
    "test_harlequin.py",
    "test_grain.py",
    "test_export.py",
    "test_catalog.py",
    "test_damaged.py",
    "test_baselines.py",
]


#: test files that share a session fixture with another file -> that file: xdist runs them on the same worker,
#: which then builds the fixture once (each worker is a process of its own and builds its own session
#: fixtures). tiny_report: test_report and test_golden; fixture_connections and bound_columns: test_column_docs,
#: test_schema and test_grain (each built on both workers cost ~2.5 CPU-s more; bench/RESULTS.md at 9434c57, session 5).
SAME_WORKER = {
    "test_golden.py": "test_report.py",
    "test_schema.py": "test_column_docs.py",
    "test_grain.py": "test_column_docs.py",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With `--dist loadfile` (README): whole files to a worker, as xdist does, the files of SAME_WORKER as one."""
    if getattr(config.option, "dist", "no") != "loadfile":
        return None  # xdist's own scheduler for the mode asked for
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            head, _, name = file.rpartition("/")
            return f"{head}/{SAME_WORKER[name]}" if name in SAME_WORKER else file

    return SharedFixtureScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    # xdist queues the files in the collection's order (below) when told not to sort them by their
    # number of tests, which says little about their time
    if getattr(config.option, "dist", "no") in ("loadfile", "loadscope"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of LONGEST_FIRST first, in that order, then the others as collected."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    position = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(LONGEST_FIRST)), position[id(item)]))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/ from what rlsql prints now (same as RLSQL_UPDATE_GOLDEN=1); review the diff.",
    )


@pytest.fixture(scope="session")
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the golden files are to be rewritten rather than compared (tests/test_golden.py)."""
    return bool(request.config.getoption("--update-golden")) or os.environ.get("RLSQL_UPDATE_GOLDEN") == "1"
