"""Prometheus metrics of one process, and the text a scrape of /metrics returns.

Metrics are on when METRICS_TOKEN is set; otherwise this module is never imported (nor is
prometheus_client). `enable(settings)` builds the metrics once per process and installs them
as the domain's recorder (shared/core/observability.py).

Several processes, one answer: gunicorn runs several worker processes, and `eonyx serve` a
Celery worker beside them. With PROMETHEUS_MULTIPROC_DIR set, prometheus_client's
multiprocess mode keeps each process's values in files in that directory and a scrape sums
them all (counters and histograms over every process that ever wrote there since the
directory was emptied; the open-sockets gauge over live processes only). The directory must
be empty when the first process starts: `eonyx serve` and gunicorn's config
(api/gunicorn_conf.py) make a fresh one with a random name unless PROMETHEUS_MULTIPROC_DIR
names one. Without it, each process answers for itself alone.

The directory is the process's own: a named one is used only if it is a real directory
owned by this account and writable by no one else (else made here, mode 0700), and only
`*.db` files directly in it are ever removed. A name anyone can compute in a shared /dev/shm
could otherwise be planted by another local account: a symbolic link to DATA_DIR would have
its `*.db` (the database) deleted, a folder writable by all would let them forge metrics.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.core import observability
from shared.core.settings import Settings

if TYPE_CHECKING:
    import redis

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
QUEUES = ("eonyx",)  # Celery's Redis transport keeps each queue as a list of that name
# Turns and model calls: from a fast local model to a long tool-using answer.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320)

_lock = threading.Lock()
_metrics: Metrics | None = None


class Metrics:
    """The process's metric objects, and the recorder the domain reports to."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = CollectorRegistry()
        reg = self.registry
        self.turn_seconds = Histogram(
            "eonyx_turn_seconds",
            "Chat turns by outcome (ok, model_error, rejected, stopped, error), in seconds.",
            ["outcome"],
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.model_call_seconds = Histogram(
            "eonyx_model_call_seconds",
            "Model calls (retries included) by task role and offering, in seconds.",
            ["role", "offering"],
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.model_call_errors = Counter(
            "eonyx_model_call_errors",
            "Model calls that failed after their retries, by role, offering and error code.",
            ["role", "offering", "error"],
            registry=reg,
        )
        self.model_tokens = Counter(
            "eonyx_model_tokens",
            "Tokens the model reported using, by role, offering and kind (prompt, completion).",
            ["role", "offering", "kind"],
            registry=reg,
        )
        self.job_runs = Counter(
            "eonyx_job_runs", "Background jobs run, by task.", ["task"], registry=reg
        )
        self.job_failures = Counter(
            "eonyx_job_failures", "Background jobs that failed, by task.", ["task"], registry=reg
        )
        self.job_seconds = Histogram(
            "eonyx_job_seconds",
            "Background job run time by task, in seconds.",
            ["task"],
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.sockets_open = Gauge(
            "eonyx_events_sockets_open",
            "Live-events WebSockets open now.",
            registry=reg,
            multiprocess_mode="livesum",
        )

    # -- observability.Recorder --

    def turn_finished(self, outcome: str, seconds: float) -> None:
        self.turn_seconds.labels(outcome).observe(seconds)

    def model_call_finished(
        self,
        role: str,
        offering: str,
        seconds: float,
        error: str | None,
        prompt_tokens: int | None,
        completion_tokens: int | None,
    ) -> None:
        self.model_call_seconds.labels(role, offering).observe(seconds)
        if error is not None:
            self.model_call_errors.labels(role, offering, error).inc()
        if prompt_tokens:
            self.model_tokens.labels(role, offering, "prompt").inc(prompt_tokens)
        if completion_tokens:
            self.model_tokens.labels(role, offering, "completion").inc(completion_tokens)

    # -- the processes' own --

    def job_finished(self, task: str, seconds: float, failed: bool) -> None:
        self.job_runs.labels(task).inc()
        self.job_seconds.labels(task).observe(seconds)
        if failed:
            self.job_failures.labels(task).inc()

    def render(self, redis_client: redis.Redis | None = None) -> bytes:
        """The exposition text: every process's metrics (multiprocess mode) or this one's,
        and the queue depth read from Redis now."""
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.multiprocess import MultiProcessCollector

        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            merged = CollectorRegistry()
            MultiProcessCollector(merged)
            text = generate_latest(merged)
        else:
            text = generate_latest(self.registry)
        if redis_client is not None:
            extra = CollectorRegistry()
            extra.register(QueueDepth(redis_client))
            text += generate_latest(extra)
        return text


class QueueDepth:
    """Jobs waiting in each queue, read from Redis at scrape time (so every process and
    replica answers the same; a failed read leaves the metric out rather than lying)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Any:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(
            "eonyx_queue_depth",
            "Jobs waiting in the queue, not yet taken by a worker.",
            labels=["queue"],
        )
        for queue in QUEUES:
            try:
                depth = self.client.llen(queue)
            except Exception:  # noqa: BLE001 - an unreachable Redis: no sample this time
                continue
            family.add_metric([queue], float(depth))
        yield family


def enable(settings: Settings) -> Metrics:
    """This process's metrics, built on first use and installed as the domain's recorder.

    PROMETHEUS_MULTIPROC_DIR reaches prometheus_client through the environment, read when a
    metric is created; a value given only in the settings is put there first."""
    global _metrics
    with _lock:
        if _metrics is None:
            directory = settings.prometheus_multiproc_dir
            if directory is not None:
                private_directory(directory)
                os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(directory))
                if os.environ["PROMETHEUS_MULTIPROC_DIR"] != str(directory):
                    raise RuntimeError("PROMETHEUS_MULTIPROC_DIR changed after start-up")
            _metrics = Metrics()
        observability.install(_metrics)
        return _metrics


def current() -> Metrics | None:
    """The process's metrics, if `enable` was called."""
    return _metrics


class UnsafeDirectory(RuntimeError):
    """A metrics directory another account could have planted or could write to."""


def private_directory(directory: str | os.PathLike[str]) -> Path:
    """`directory`, made here (mode 0700) if it does not exist; UnsafeDirectory if it is a
    symbolic link, not a directory, owned by another account or writable by group or others."""
    path = Path(directory)
    if not path.is_absolute():
        raise UnsafeDirectory(f"the metrics directory {path} must be an absolute path")
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    _check(path, os.lstat(path))
    return path


def _check(path: Path, found: os.stat_result) -> None:
    said = f"refusing the metrics directory {path} (PROMETHEUS_MULTIPROC_DIR)"
    if stat.S_ISLNK(found.st_mode):
        raise UnsafeDirectory(f"{said}: it is a symbolic link")
    if not stat.S_ISDIR(found.st_mode):
        raise UnsafeDirectory(f"{said}: it is not a directory")
    if found.st_uid != os.geteuid():
        raise UnsafeDirectory(
            f"{said}: it belongs to uid {found.st_uid}, not to this account ({os.geteuid()})"
        )
    if found.st_mode & 0o022:
        mode = stat.S_IMODE(found.st_mode)
        raise UnsafeDirectory(f"{said}: others may write to it (mode {mode:o}); use 0700")


def new_directory() -> Path:
    """A fresh directory with a random name (mode 0700): on the RAM disk when there is one.
    Its files are memory-mapped, and a memory-mapped file on a full disk kills the process
    that writes to it (SIGBUS)."""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
    return Path(tempfile.mkdtemp(prefix="eonyx-metrics-", dir=base))


def empty_directory(directory: str | os.PathLike[str]) -> None:
    """Remove a previous run's files (a multiprocess directory must start empty): the
    `*.db` files directly in `directory` (a link itself, never what it points to), once it
    passed `private_directory`. The
    directory is opened without following a link and checked again by its descriptor, so
    a swap after the check removes nothing elsewhere."""
    path = private_directory(directory)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _check(path, os.fstat(fd))
        for name in os.listdir(fd):
            if name.endswith(".db"):
                found = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(found.st_mode) or stat.S_ISLNK(found.st_mode):
                    os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
