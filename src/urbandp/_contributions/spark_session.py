"""A SparkSession for urbandp, and a plain reason when Spark cannot run here.

PySpark is an optional extra (``pip install 'urbandp[spark]'``) and needs a Java runtime (17 or newer for PySpark
4). Nothing outside :mod:`urbandp._contributions.spark_backend` and this module imports it.
Pitfalls measured before the project started (notes/measured-options.md): workers must run the same Python as the
driver (``PYSPARK_PYTHON``, otherwise they fail to unpickle the batch functions), and a session takes 10-15 s to
start, so Spark is the scale-out engine, never the default.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING

from urbandp.errors import InputError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def check_engine(engine: str, spark_master: str | None) -> str:
    """The ``engine`` / ``spark_master`` pair of a release, checked (one line and exit 2 at the CLI, which names
    them ``--engine`` and ``--spark-master``)."""
    if engine not in ("polars", "spark"):
        raise InputError(f"engine must be polars or spark, got {engine!r}", parameters="engine")
    if spark_master is not None and engine != "spark":
        raise InputError("spark_master needs engine spark", parameters=("spark_master", "engine"))
    return engine


MASTER_PROBE_SECONDS = 5.0
"""How long a ``spark://`` master may take to accept a TCP connection before the run is refused (Spark itself
retries an unreachable master for a minute and then prints a Java stack trace)."""


def check_master_reachable(master: str) -> None:
    """Refuse, with one line, a standalone master (``spark://host:port``) that accepts no connection.

    Only the address the user named is contacted, as Spark would; ``local[...]``, ``yarn`` and ``k8s://`` are left
    to Spark.
    """
    import socket

    if not master.startswith("spark://"):
        return
    first = master.removeprefix("spark://").split(",")[0]
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(
            f"spark_master must look like spark://host:7077, got {master!r}", parameters="spark_master"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_PROBE_SECONDS).close()
    except OSError as err:
        raise InputError(
            f"spark_master {master}: cannot reach the master ({err.strerror or err}); is it running?",
            parameters="spark_master",
        ) from None


def java_error_line(err: BaseException) -> str:
    """The first sentence of a Py4J/Java error, without its Java stack trace (one line)."""
    text = " ".join(str(err).split())
    for cut in (" at org.", " at java.", " at py4j.", " java.base/"):
        text = text.split(cut)[0]
    return text[:300]


def spark_missing_reason() -> str | None:
    """``None`` when Spark can run here; otherwise why not (PySpark not installed, or no Java runtime)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "PySpark is not installed (pip install 'urbandp[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and os.path.exists(os.path.join(java_home, "bin", "java"))) and not shutil.which(
        "java"
    ):
        return (
            "no Java runtime: install one (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return None


def local_driver_memory() -> str:
    """Driver memory for a local-mode session: ``URBANDP_SPARK_DRIVER_MEMORY`` if set, else a quarter of physical
    memory clamped to 1-8 GB (Spark's own default is 1 GB)."""
    chosen = os.environ.get("URBANDP_SPARK_DRIVER_MEMORY")
    if chosen:
        return chosen
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "1g"
    return f"{max(1, min(8, total // 4 // (1 << 30)))}g"


ENGINE_SQL_ZONE = "UTC"
"""The Spark SQL session time zone the engine relies on: typed Parquet timestamps reach the validation batches as
UTC wall-clock times, the instants Polars reads (``spark_backend`` drops the zone Spark attaches)."""


def with_engine_settings(spark: SparkSession) -> SparkSession:
    """``spark`` with the SQL time zone the engine needs, for a session urbandp did not build (spark-submit's, or
    one already active). Measured on a standalone cluster: under spark-submit with a driver JVM in
    America/Chicago, typed UTC Parquet timestamps put 2,780 records in the window instead of Polars' 6,892."""
    if spark.conf.get("spark.sql.session.timeZone") != ENGINE_SQL_ZONE:
        spark.conf.set("spark.sql.session.timeZone", ENGINE_SQL_ZONE)
    return spark


def get_spark(master: str | None = None) -> SparkSession:
    """The active session, or a new one on ``master`` (default ``local[*]``; ``spark://host:7077`` for a cluster).

    Session settings that the engine relies on: the SQL session time zone is UTC (typed Parquet timestamps then
    reach the validation as the same instants Polars reads), Arrow batches of 50,000 rows (fewer Python calls).
    Raises :class:`InputError` naming what is missing when Spark cannot start.
    """
    reason = spark_missing_reason()
    if reason is not None:
        raise InputError(f"engine spark: {reason}", parameters="engine")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return with_engine_settings(active)
    if active is not None:
        active.stop()
    if master is None and os.environ.get("PYSPARK_GATEWAY_PORT"):
        # launched by spark-submit: its master, memory and --conf settings win, but the SQL time zone
        return with_engine_settings(SparkSession.builder.appName("urbandp").getOrCreate())
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName("urbandp")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", ENGINE_SQL_ZONE)
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50000")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"])
        .config("spark.ui.showConsoleProgress", "false")
    )
    if (master or DEFAULT_MASTER).startswith("local"):  # 200 shuffle partitions are for clusters
        builder = builder.config("spark.sql.shuffle.partitions", "8")
        # In local mode the driver JVM also runs every task: Spark's 1 GB default died (JVM gone, "Connection
        # refused") on 19 M records with local[2]. A quarter of the machine's memory, 1-8 GB, unless set.
        builder = builder.config("spark.driver.memory", local_driver_memory())
    check_master_reachable(master or DEFAULT_MASTER)
    try:
        spark = builder.getOrCreate()
    except Exception as err:  # py4j / Java start-up failures come in many types
        raise InputError(
            f"engine spark: cannot start Spark on {master or DEFAULT_MASTER}: {java_error_line(err)}",
            parameters="engine",
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark
