"""The Celery app is configured for a queue that may lose or repeat jobs (workers/app.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import Celery

from shared.core.settings import load_settings
from shared.db.database import Database
from shared.infra.embedded_redis import EmbeddedRedis
from workers.app import QUEUE, celery_url, create_celery


@pytest.fixture
def celery_app(tmp_path: Path) -> Celery:
    settings = load_settings(
        {
            "DATA_DIR": str(tmp_path / "data"),
            "HOME": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:6379/12",  # not contacted: nothing is sent
        }
    )
    return create_celery(settings)


def test_jobs_survive_a_lost_worker(celery_app: Celery) -> None:
    conf = celery_app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_time_limit
    assert conf.task_time_limit > 0


def test_a_cold_shutdown_gives_running_jobs_a_moment_then_requeues_them(
    celery_app: Celery,
) -> None:
    """A second SIGTERM (or SIGQUIT) is a cold shutdown: Celery's soft shutdown lets running
    jobs go on for a few seconds, then returns their messages to Redis."""
    assert celery_app.conf.worker_soft_shutdown_timeout > 0


def test_a_dead_workers_job_goes_to_another_within_minutes(
    celery_app: Celery, tmp_path: Path
) -> None:
    """Redis hands an unacknowledged job to another worker after the visibility timeout: a
    couple of minutes by default (not an hour, nor Celery's 30-minute guess of ours), and a
    setting (JOB_VISIBILITY_TIMEOUT_SECONDS) for deployments whose jobs run longer."""
    conf = celery_app.conf
    assert conf.broker_transport_options["visibility_timeout"] <= 120
    assert conf.broker_transport_options["unacked_mutex_expire"] <= 120
    if conf.task_soft_time_limit:
        assert conf.task_soft_time_limit < conf.task_time_limit
    settings = load_settings(
        {
            "DATA_DIR": str(tmp_path / "data"),
            "HOME": str(tmp_path),
            "REDIS_URL": "redis://127.0.0.1:6379/12",
            "JOB_VISIBILITY_TIMEOUT_SECONDS": "900",
        }
    )
    assert create_celery(settings).conf.broker_transport_options["visibility_timeout"] == 900


def test_beat_schedules_only_registered_tasks(celery_app: Celery) -> None:
    import workers.tasks  # noqa: F401 - registers the shared tasks, as the worker's include does

    assert "workers.tasks" in celery_app.conf.include  # so a worker imports them too
    schedule = celery_app.conf.beat_schedule
    assert schedule, "the periodic sweeps are what make lost jobs harmless"
    registered = set(celery_app.tasks)
    for name, entry in schedule.items():
        assert entry["task"] in registered, f"beat entry {name} names unknown {entry['task']}"
        assert entry["schedule"] > 0


def test_the_api_results_it_reads_are_kept(celery_app: Celery) -> None:
    """GET /jobs/<id> reads the rebuild job's result: that task must store it."""
    import workers.tasks  # noqa: F401

    assert celery_app.tasks["eonyx.index.rebuild"].ignore_result is False
    assert celery_app.conf.result_expires is not None


def test_everything_goes_to_the_queue_the_worker_consumes(
    celery_app: Celery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import workers.app
    from cli.command import main

    argvs: list[list[str]] = []
    monkeypatch.setattr(workers.app, "create_celery", lambda settings: celery_app)
    monkeypatch.setattr(celery_app, "worker_main", argvs.append)
    env = {"DATA_DIR": str(tmp_path / "data"), "REDIS_URL": "redis://127.0.0.1:6379/12"}
    (tmp_path / "data").mkdir()
    database = Database(load_settings(env).database_url)
    database.migrate()  # a worker waits for the schema
    database.dispose()
    result = CliRunner(env=env).invoke(main, ["worker"])
    assert result.exit_code == 0, result.output
    (argv,) = argvs
    # A default queue the worker does not consume would strand every job.
    assert argv[argv.index("-Q") + 1] == celery_app.conf.task_default_queue == QUEUE
    assert "--beat" not in argv  # beat only when asked: one per deployment


def test_schedule_file_lives_in_the_data_dir(celery_app: Celery, tmp_path: Path) -> None:
    schedule_file = Path(celery_app.conf.beat_schedule_filename)
    assert schedule_file.is_relative_to(tmp_path / "data")


def test_embedded_redis_socket_becomes_a_celery_url(tmp_path: Path) -> None:
    assert celery_url("unix:///run/r.sock") == "redis+socket:///run/r.sock"
    assert celery_url("redis://h:6379/0") == "redis://h:6379/0"
    settings = load_settings({"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    with pytest.raises(RuntimeError, match="no Redis"):
        create_celery(settings)
    server = EmbeddedRedis(tmp_path / "data")
    server.start()
    try:
        app = create_celery(settings)
        assert app.conf.broker_url == "redis+socket://" + str(server.socket)
        assert app.redis_url == server.url  # what the worker's runtime connects to
    finally:
        server.stop()


def test_the_worker_runtime_is_built_once_and_closed_at_worker_shutdown(
    celery_app: Celery,
) -> None:
    from celery.signals import worker_shutdown

    class WorkController:  # what Celery sends the signal from
        app = celery_app

    runtime = celery_app.runtime
    assert celery_app.runtime is runtime  # one per worker, shared by its pool threads
    worker_shutdown.send(sender=WorkController())
    assert runtime.closed
    assert celery_app.runtime is not runtime  # a later use builds a fresh one
    celery_app.close_runtime()


def test_every_job_name_has_a_task(celery_app: Celery) -> None:
    """A job sent by name to no task would sit in the queue forever."""
    import workers.tasks  # noqa: F401
    from shared.core import job_names

    names = {
        value for key, value in vars(job_names).items() if key.isupper() and isinstance(value, str)
    }
    assert job_names.TEAMS_TURN in names
    assert names <= set(celery_app.tasks)


def test_beat_resends_lost_titles_within_a_minute(celery_app: Celery) -> None:
    import workers.tasks  # noqa: F401
    from shared.core.job_names import SESSION_TITLE, SWEEP_TITLES

    assert SESSION_TITLE in celery_app.tasks
    schedule = {
        entry["task"]: entry["schedule"] for entry in celery_app.conf.beat_schedule.values()
    }
    # A title lost with its worker is named within a minute (shared/infra/lost_jobs.py).
    assert schedule[SWEEP_TITLES] <= 30


def test_beat_purges_the_trash_hourly_and_the_task_purges(celery_app: Celery) -> None:
    """A session 31 days in the trash is gone after the task runs; a newer one stays."""
    from datetime import timedelta

    import workers.tasks  # noqa: F401
    from shared.core import job_names
    from shared.core.clock import isoformat, utcnow
    from shared.index import sync

    schedule = {
        entry["task"]: entry["schedule"] for entry in celery_app.conf.beat_schedule.values()
    }
    assert schedule[job_names.PURGE_TRASH] <= 60 * 60
    rt = celery_app.runtime  # type: ignore[attr-defined]
    rt.db.migrate()
    user = "b" * 32
    ids = []
    for days in (31, 29):
        state, _ = rt.store.create(user, source="web", title=f"{days} days ago")
        deleted = isoformat(utcnow() - timedelta(days=days))
        rt.store.append(
            user, state.id, [{"type": "meta", "at": deleted, "set": {"deleted_at": deleted}}]
        )
        with rt.db.session() as db:
            sync.record(db, *rt.store.load(user, state.id))
        ids.append(state.id)
    try:
        result = celery_app.tasks[job_names.PURGE_TRASH].apply().get()
    finally:
        celery_app.close_runtime()  # type: ignore[attr-defined]
    assert result["purged"] == 1
    assert not rt.store.path(user, ids[0]).exists()
    assert rt.store.path(user, ids[1]).exists()
    assert {"worker", "pid"} <= result.keys()  # eonyx_task adds where the job ran


def test_a_job_sent_with_the_wrong_arguments_is_refused_when_sent(celery_app: Celery) -> None:
    """eonyx_task gives each task its function's arguments (the runtime aside): a sender
    that passes too few or too many learns it at once, not from a failed job later."""
    import workers.tasks  # noqa: F401
    from shared.core import job_names

    title = celery_app.tasks[job_names.SESSION_TITLE]
    with pytest.raises(TypeError, match="session_id"):
        title.apply_async(args=("a" * 32,))
    with pytest.raises(TypeError):
        celery_app.tasks[job_names.SWEEP_TITLES].apply_async(args=("extra",))
