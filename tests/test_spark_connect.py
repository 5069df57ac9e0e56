"""A named query through Spark Connect: a local Spark Connect server, SPARK_REMOTE, the rlsql command.

The server is pyspark's own `sbin/start-connect-server.sh --wait` (what docs/spark.md, "Using it",
tells a user to start), on a free port, with its logs and pid file in a temporary folder; this test
stops the process group it started. Skipped with the reason when pyspark, its Connect client
libraries or Java are absent; fails instead when RLSQL_REQUIRE_SPARK=1 (CI).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import RUNS, SPARK_TEST_CONF, SPARK_TEST_JAVA_OPTIONS

pytestmark = pytest.mark.spark

REQUIRED = os.environ.get("RLSQL_REQUIRE_SPARK") == "1"


def _spark_home() -> Path | str:
    try:
        import pyspark
    except ImportError:
        return "pyspark is not installed (pip install 'rlsql[spark]')"
    try:
        import grpc  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return "Spark Connect's client libraries are not installed (pip install 'pyspark[connect]')"
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        return "Java is not installed (Debian: apt-get install openjdk-17-jre-headless)"
    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    home = _spark_home()
    if isinstance(home, str):
        if REQUIRED:
            pytest.fail(f"RLSQL_REQUIRE_SPARK=1 but {home}")
        pytest.skip(home)
    work = tmp_path_factory.mktemp("spark-connect")
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(work), "SPARK_PID_DIR": str(work)}
    server = subprocess.Popen(
        [
            str(home / "sbin" / "start-connect-server.sh"),
            "--wait",
            "--master",
            "local[2]",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            # the short-lived JVM's flags and settings of the other Spark tests (tests/conftest.py)
            "--driver-java-options",
            SPARK_TEST_JAVA_OPTIONS,
            *[arg for pair in SPARK_TEST_CONF.split() for arg in ("--conf", pair)],
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "server.err").open("w"),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                pytest.fail(
                    f"the Spark Connect server exited ({server.returncode}): "
                    f"{(work / 'server.err').read_text()[-2000:]}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                pytest.fail("the Spark Connect server did not listen within 180 s")
            time.sleep(0.2)  # it listens ~8 s after starting: a finer poll, up to 0.8 s sooner
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def test_named_query_through_spark_connect(connect_server, rlsql_exe):
    """docs/spark.md, "Using it", step by step: the server started from the pyspark package, then
    `SPARK_REMOTE=sc://... rlsql query turns_by_exception --engine spark` (the sample run), and the same
    on a fixture run; the tables are DuckDB's."""
    env = dict(os.environ)
    env.pop("RLSQL_ENGINE", None)
    for runs in ([], ["-r", str(RUNS / "calendar")]):
        duck = subprocess.run(
            [rlsql_exe, "query", "turns_by_exception", *runs], capture_output=True, text=True, env=env
        )
        remote = subprocess.run(
            [rlsql_exe, "query", "turns_by_exception", "--engine", "spark", *runs],
            capture_output=True,
            text=True,
            env={**env, "SPARK_REMOTE": connect_server},
        )
        assert duck.returncode == 0, duck.stderr
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == duck.stdout
        assert "Traceback" not in remote.stderr
