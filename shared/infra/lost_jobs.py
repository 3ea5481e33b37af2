"""What the sweeps share to find a job lost with its worker and send it again.

A job that waits on a model holds a lock named after its work, kept alive while its worker
lives (shared/infra/locks.py, `keepalive`); a worker that dies stops renewing it, and it
lapses JOB_LOCK_TTL seconds later. A sweep that finds work undone LOST_AFTER after it was
asked for, and no job holding its lock, sends the job again, at most once per RESEND_EVERY
(a job only queued behind others is not lost and need not be sent every sweep). With the
sweeps every SWEEP_SECONDS, a job lost with its worker runs again within about
JOB_LOCK_TTL + SWEEP_SECONDS (50 s) of the worker's death.
"""

from __future__ import annotations

from datetime import timedelta

import redis

from shared.core import registry
from shared.core.errors import Conflict
from shared.core.job_names import JobQueue
from shared.infra.locks import Locks

SWEEP_SECONDS = 30  # how often beat runs the sweeps of lost jobs (memory, titles)
JOB_LOCK_WAIT = 5 * 60  # a duplicate waits for the running job, then finds the work done
JOB_LOCK_TTL = 20  # seconds a dead worker's job lock outlives it (kept alive while it runs)
LOST_AFTER = timedelta(seconds=30)  # a job neither done nor running this long after: lost
RESEND_EVERY = 60  # seconds between two re-sends of the same lost job


def job_running(locks: Locks, lock: str) -> bool:
    """Whether a job holds `lock` now: a live one keeps it, a dead worker's lapses soon."""
    try:
        with locks.hold(lock, wait=0, ttl=5):
            return False
    except Conflict:
        return True


def resend(client: redis.Redis | None, jobs: JobQueue, key: str, job: str, *args: object) -> bool:
    """Send a lost job again, unless the same `key` was sent again in the last RESEND_EVERY."""
    if client is not None and not client.set(registry.RESENT + key, 1, nx=True, ex=RESEND_EVERY):
        return False
    jobs.enqueue(job, *args)
    return True
