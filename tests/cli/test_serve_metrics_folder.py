"""`eonyx serve` with METRICS_TOKEN sums its processes' metrics in a folder of its own (issue
38, item 5). It used `/dev/shm/eonyx-metrics-<sha256(DATA_DIR)[:12]>`, a name any local
account can compute, followed whatever was there and deleted every `*.db` in it: a link to
DATA_DIR planted before a restart deleted eonyx.db (every account lost)."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.serving import Served, admin_client
from tests.cli.test_serve import metrics_directory_of

pytestmark = pytest.mark.slow

TOKEN = "serve-metrics-token-0123"
NOBODY = 65534


def predictable(data_dir: Path) -> Path:
    """The folder serve used to take for `data_dir`."""
    digest = hashlib.sha256(str(data_dir.absolute()).encode()).hexdigest()[:12]
    return Path("/dev/shm") / f"eonyx-metrics-{digest}"


@pytest.fixture
def plant(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """plant(path): a link at `path` to DATA_DIR, made before serve starts; removed after."""
    planted: list[Path] = []

    def make(path: Path) -> Path:
        data = tmp_path / "data"
        data.mkdir(mode=0o700, exist_ok=True)
        path.symlink_to(data)
        planted.append(path)
        return data

    yield make
    for path in planted:
        if path.is_symlink():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="no RAM disk to plant in")
def test_a_link_at_the_old_predictable_name_deletes_nothing(
    start_serve: Callable[..., Served], tmp_path: Path, plant: Callable[[Path], Path]
) -> None:
    data = plant(predictable(tmp_path / "data"))
    (data / "precious.db").write_bytes(b"kept")  # as eonyx.db would be on a restart
    served = start_serve(METRICS_TOKEN=TOKEN)
    url = served.wait_url()
    assert (data / "precious.db").read_bytes() == b"kept"
    assert (data / "eonyx.db").is_file()
    with admin_client(served, url) as http:  # accounts work: the database is whole
        assert http.post("/api/v1/sessions", json={"title": "Still here"}).status_code == 201
    used = metrics_directory_of(served.child("gunicorn"))
    assert used != predictable(data)
    assert not used.is_symlink()
    assert used.stat().st_uid == os.geteuid()
    assert used.stat().st_mode & 0o777 == 0o700
    served.stop_with_ctrl_c()
    assert (data / "precious.db").read_bytes() == b"kept"
    assert not used.exists()  # its own folder, removed at the stop


def test_a_named_folder_that_is_a_link_or_someone_elses_is_refused(
    start_serve: Callable[..., Served], tmp_path: Path, plant: Callable[[Path], Path]
) -> None:
    link = tmp_path / "planted-link"
    data = plant(link)
    (data / "precious.db").write_bytes(b"kept")
    served = start_serve(METRICS_TOKEN=TOKEN, PROMETHEUS_MULTIPROC_DIR=str(link))
    assert served.process.wait(60) == 1
    assert f"refusing the metrics directory {link}" in served.output
    assert "symbolic link" in served.output
    assert (data / "precious.db").read_bytes() == b"kept"
    assert (data / "eonyx.db").is_file()  # migrated before the refusal, and left alone

    if os.geteuid() != 0:
        return  # only root can give a folder to another account
    folder = tmp_path / "open-folder"
    folder.mkdir()
    (folder / "counter_1.db").write_bytes(b"someone else's")
    folder.chmod(0o777)
    os.chown(folder, NOBODY, NOBODY)
    served = start_serve(METRICS_TOKEN=TOKEN, PROMETHEUS_MULTIPROC_DIR=str(folder))
    assert served.process.wait(60) == 1
    assert f"it belongs to uid {NOBODY}" in served.output
    assert (folder / "counter_1.db").read_bytes() == b"someone else's"
