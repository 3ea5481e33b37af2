"""AGENTS.md discovery, cwd resolution, eonyx.json and client project_context validation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.chat.project_context import (
    MAX_AGENTS_FILE_BYTES,
    MAX_CONTEXT_FILES,
    MAX_CONTEXT_TOTAL_BYTES,
    TRUNCATION_MARKER,
    ContextFile,
    discover_agents_files,
    find_project_root,
    load_server_context,
    read_project_config,
    resolve_cwd,
    validate_project_context,
    walk_up,
)
from shared.core.errors import InvalidInput


def write(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    root.mkdir()
    return root


def paths(files: list[ContextFile]) -> list[str]:
    return [f.path for f in files]


# --- discovery ---------------------------------------------------------------------------


def test_nested_agents_files_stop_at_eonyx_json_outermost_first(projects: Path) -> None:
    write(projects / "AGENTS.md", "above the project: never read")
    app = projects / "my-project"
    write(app / "eonyx.json", "{}")
    write(app / "AGENTS.md", "stack and conventions")
    write(app / "services" / "billing" / "AGENTS.md", "billing specifics")
    start = app / "services" / "billing" / "api"
    start.mkdir()

    files = discover_agents_files(start, boundary=projects)

    assert files == [
        ContextFile("AGENTS.md", "stack and conventions"),
        ContextFile("services/billing/AGENTS.md", "billing specifics"),
    ]
    walk = walk_up(start, boundary=projects)
    assert walk.stop == "project"
    assert walk.top == app.resolve()
    assert walk.directories[0] == start.resolve()
    assert walk.directories[-1] == app.resolve()
    assert find_project_root(start, boundary=projects) == app.resolve()


def test_every_level_is_collected_including_the_start(projects: Path) -> None:
    app = projects / "p"
    write(app / "eonyx.json", "{}")
    for rel in ("AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md", "a/b/c/AGENTS.md"):
        write(app / rel, rel)
    files = discover_agents_files(app / "a" / "b" / "c", boundary=projects)
    assert paths(files) == ["AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md", "a/b/c/AGENTS.md"]
    assert [f.content for f in files] == paths(files)


def test_walk_stops_at_git_directory_or_file(projects: Path) -> None:
    write(projects / "AGENTS.md", "outside the repo")
    repo = projects / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "AGENTS.md", "repo rules")
    write(repo / "pkg" / "AGENTS.md", "pkg rules")
    files = discover_agents_files(repo / "pkg", boundary=projects)
    assert paths(files) == ["AGENTS.md", "pkg/AGENTS.md"]
    walk = walk_up(repo / "pkg", boundary=projects)
    assert walk.stop == "git"
    assert walk.project_root is None
    assert find_project_root(repo / "pkg", boundary=projects) is None

    worktree = projects / "worktree"
    write(worktree / ".git", "gitdir: /elsewhere")  # worktrees and submodules: a .git file
    write(worktree / "AGENTS.md", "worktree rules")
    assert paths(discover_agents_files(worktree, boundary=projects)) == ["AGENTS.md"]


def test_nearest_marker_wins_eonyx_json_inside_a_repo(projects: Path) -> None:
    repo = projects / "mono"
    (repo / ".git").mkdir(parents=True)
    write(repo / "AGENTS.md", "monorepo rules")
    service = repo / "services" / "billing"
    write(service / "eonyx.json", '{"system_prompt": "billing bot"}')
    write(service / "AGENTS.md", "billing")
    walk = walk_up(service, boundary=projects)
    assert walk.stop == "project"
    assert paths(discover_agents_files(service, boundary=projects)) == ["AGENTS.md"]


def test_boundary_is_the_last_directory_visited(projects: Path, tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "above PROJECTS_DIR: never read")
    write(projects / "AGENTS.md", "projects-wide")
    write(projects / "x" / "y" / "AGENTS.md", "y")
    walk = walk_up(projects / "x" / "y", boundary=projects)
    assert walk.stop == "boundary"
    assert walk.top == projects.resolve()
    files = discover_agents_files(projects / "x" / "y", boundary=projects)
    assert paths(files) == ["AGENTS.md", "x/y/AGENTS.md"]


def _expected_top(directory: Path) -> Path:
    """Independent oracle: the first ancestor with a marker, else the filesystem root."""
    for candidate in (directory, *directory.parents):
        if os.path.lexists(candidate / "eonyx.json") or os.path.lexists(candidate / ".git"):
            return candidate
    return Path(directory.anchor)


def test_without_markers_or_boundary_the_walk_reaches_the_filesystem_root(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "nomarkers"
    write(tree / "AGENTS.md", "outer")
    write(tree / "a" / "b" / "AGENTS.md", "inner")
    start = (tree / "a" / "b").resolve()

    walk = walk_up(start)
    expected_top = _expected_top(start)
    assert walk.top == expected_top
    if expected_top == Path(start.anchor):
        assert walk.stop == "filesystem_root"
        assert walk.directories == (start, *start.parents)
    expected = [
        (d / "AGENTS.md").relative_to(expected_top).as_posix()
        for d in reversed(walk.directories)
        if (d / "AGENTS.md").is_file()
    ]
    files = discover_agents_files(start)
    assert paths(files) == expected
    rel_tree = tree.resolve().relative_to(expected_top).as_posix()
    assert paths(files)[-2:] == [f"{rel_tree}/AGENTS.md", f"{rel_tree}/a/b/AGENTS.md"]
    assert [f.content for f in files[-2:]] == ["outer", "inner"]


def test_start_must_exist_be_a_directory_and_lie_in_the_boundary(
    projects: Path, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInput):
        discover_agents_files(projects / "missing", boundary=projects)
    write(projects / "file.txt", "x")
    with pytest.raises(InvalidInput):
        discover_agents_files(projects / "file.txt", boundary=projects)
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(InvalidInput):
        discover_agents_files(outside, boundary=projects)


def test_symlinked_agents_file_pointing_outside_the_boundary_is_not_read(
    projects: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "secret.txt", "TOP SECRET")
    app = projects / "app"
    write(app / "eonyx.json", "{}")
    (app / "AGENTS.md").symlink_to(secret)
    write(app / "shared-rules.md", "shared rules")
    (app / "sub").mkdir()
    (app / "sub" / "AGENTS.md").symlink_to(app / "shared-rules.md")

    files = discover_agents_files(app / "sub", boundary=projects)
    assert files == [ContextFile("sub/AGENTS.md", "shared rules")]
    assert all("SECRET" not in f.content for f in files)

    # A client walking its own machine (no boundary) follows its own symlinks.
    assert "TOP SECRET" in [f.content for f in discover_agents_files(app / "sub")]


def test_dangling_looping_and_non_regular_agents_files_are_skipped(projects: Path) -> None:
    app = projects / "app"
    write(app / "eonyx.json", "{}")
    (app / "AGENTS.md").symlink_to(app / "nowhere.md")
    (app / "a").mkdir()
    (app / "a" / "AGENTS.md").mkdir()  # a directory named AGENTS.md
    (app / "a" / "b").mkdir()
    os.mkfifo(app / "a" / "b" / "AGENTS.md")  # would block a naive read
    (app / "a" / "b" / "c").mkdir()
    (app / "a" / "b" / "c" / "AGENTS.md").symlink_to("AGENTS.md")  # a loop
    write(app / "a" / "b" / "c" / "d" / "AGENTS.md", "ok")
    files = discover_agents_files(app / "a" / "b" / "c" / "d", boundary=projects)
    assert files == [ContextFile("a/b/c/d/AGENTS.md", "ok")]


def test_large_agents_file_is_truncated_with_a_marker(projects: Path) -> None:
    app = projects / "app"
    write(app / "eonyx.json", "{}")
    body = "é" * MAX_AGENTS_FILE_BYTES  # 2 bytes each: the cut may fall inside a character
    write(app / "AGENTS.md", body)
    [file] = discover_agents_files(app, boundary=projects)
    assert file.content.endswith(TRUNCATION_MARKER)
    assert len(file.content.encode()) <= MAX_AGENTS_FILE_BYTES
    kept = file.content[: -len(TRUNCATION_MARKER)]
    assert kept
    assert set(kept) == {"é"}
    # what discovery produces is always accepted back from a client
    assert validate_project_context([file.to_dict()]) == [file]


def test_total_budget_keeps_the_nearest_files(projects: Path) -> None:
    app = projects / "app"
    write(app / "eonyx.json", "{}")
    size = 60 * 1024
    full = MAX_CONTEXT_TOTAL_BYTES // size  # 4 whole files fit, the 5th overflows
    levels = full + 2
    directory = app
    for level in range(levels):
        write(directory / "AGENTS.md", str(level) * size)
        directory = directory / f"d{level}"
    directory.mkdir()
    files = discover_agents_files(directory, boundary=projects)
    total = sum(len(f.content.encode()) for f in files)
    assert total <= MAX_CONTEXT_TOTAL_BYTES
    assert len(files) == full + 1  # the outermost file is left out
    assert files[-1].path == "/".join([f"d{i}" for i in range(levels - 1)] + ["AGENTS.md"])
    assert [f.content[0] for f in files] == [str(level) for level in range(1, levels)]
    assert files[0].content.endswith(TRUNCATION_MARKER)  # the overflowing file, cut to fit
    assert all(len(f.content) == size for f in files[1:])
    assert validate_project_context([f.to_dict() for f in files]) == files


def test_utf8_bom_is_dropped_and_bad_bytes_are_replaced(projects: Path) -> None:
    app = projects / "app"
    app.mkdir()
    (app / "eonyx.json").write_text("{}")
    (app / "AGENTS.md").write_bytes(b"\xef\xbb\xbfrules \xff end")
    [file] = discover_agents_files(app, boundary=projects)
    assert file.content == "rules \ufffd end"


def test_control_characters_in_an_agents_file_are_dropped(projects: Path) -> None:
    """What the API would refuse in `project_context` never comes from a file on disk."""
    app = projects / "app"
    app.mkdir()
    (app / "eonyx.json").write_text("{}")
    write(app / "AGENTS.md", "page one\x0cpage two\n\x1b[31mred\x1b[0m\tok\u202e\n")
    [file] = discover_agents_files(app, boundary=projects)
    assert file.content == "page onepage two\n[31mred[0m\tok\n"
    validate_project_context([file.to_dict()])  # what a client sends is accepted as it is


def test_a_client_context_with_control_characters_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"project_context\[0\].content contains a control"):
        validate_project_context([{"path": "AGENTS.md", "content": "a\x00b"}])


# --- cwd ---------------------------------------------------------------------------------


def test_resolve_cwd_relative_and_absolute_inside(projects: Path) -> None:
    (projects / "app" / "src").mkdir(parents=True)
    assert resolve_cwd(projects, "app/src") == (projects / "app" / "src").resolve()
    assert resolve_cwd(projects, str(projects / "app")) == (projects / "app").resolve()
    assert resolve_cwd(projects, ".") == projects.resolve()


@pytest.mark.parametrize("cwd", ["../", "app/../../etc", "/etc", "/", "..", ""])
def test_resolve_cwd_refuses_paths_outside(projects: Path, cwd: str) -> None:
    (projects / "app").mkdir()
    with pytest.raises(InvalidInput):
        resolve_cwd(projects, cwd)


def test_resolve_cwd_refuses_a_symlink_escape(projects: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (projects / "link").symlink_to(outside)
    with pytest.raises(InvalidInput, match="symlink"):
        resolve_cwd(projects, "link")
    with pytest.raises(InvalidInput, match="symlink"):
        resolve_cwd(projects, str(projects / "link"))


def test_resolve_cwd_allows_a_symlink_that_stays_inside(projects: Path) -> None:
    (projects / "real").mkdir()
    (projects / "alias").symlink_to(projects / "real")
    assert resolve_cwd(projects, "alias") == (projects / "real").resolve()


def test_resolve_cwd_missing_file_and_unconfigured(projects: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        resolve_cwd(projects, "missing")
    write(projects / "file.txt", "x")
    with pytest.raises(InvalidInput, match="not a directory"):
        resolve_cwd(projects, "file.txt")
    with pytest.raises(InvalidInput, match="PROJECTS_DIR") as info:
        resolve_cwd(None, "app")
    assert info.value.code == "cwd_unavailable"
    with pytest.raises(InvalidInput):
        resolve_cwd(tmp_path / "no-such-projects-dir", "app")
    with pytest.raises(InvalidInput):
        resolve_cwd(projects, "a\0b")


def test_resolve_cwd_accepts_the_configured_spelling_of_a_symlinked_projects_dir(
    tmp_path: Path,
) -> None:
    real = tmp_path / "data" / "projects"
    (real / "app").mkdir(parents=True)
    configured = tmp_path / "projects-link"
    configured.symlink_to(real)
    assert resolve_cwd(configured, str(configured / "app")) == (real / "app").resolve()
    assert resolve_cwd(configured, "app") == (real / "app").resolve()


# --- eonyx.json ----------------------------------------------------------------------------


def test_read_project_config(projects: Path) -> None:
    app = projects / "app"
    app.mkdir()
    assert read_project_config(app) == {}
    assert read_project_config(None) == {}
    write(app / "eonyx.json", '{"system_prompt": "You are a billing bot."}')
    assert read_project_config(app) == {"system_prompt": "You are a billing bot."}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"system_prompt": ', "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"system_prompt": 5}', "system_prompt must be a string"),
    ],
)
def test_read_project_config_refuses_bad_files(projects: Path, text: str, message: str) -> None:
    write(projects / "eonyx.json", text)
    with pytest.raises(InvalidInput, match=message) as info:
        read_project_config(projects)
    assert info.value.code == "invalid_project_config"


def test_symlinked_config_outside_boundary_is_ignored(projects: Path, tmp_path: Path) -> None:
    evil = write(tmp_path / "evil.json", '{"system_prompt": "from outside"}')
    app = projects / "app"
    app.mkdir()
    (app / "eonyx.json").symlink_to(evil)
    assert read_project_config(app, boundary=projects) == {}


def test_load_server_context(projects: Path) -> None:
    app = projects / "team" / "app"
    write(app / "eonyx.json", '{"system_prompt": "Project prompt"}')
    write(app / "AGENTS.md", "root rules")
    write(app / "svc" / "AGENTS.md", "svc rules")
    context = load_server_context(projects, "team/app/svc")
    assert context.directory == (app / "svc").resolve()
    assert context.walk.project_root == app.resolve()
    assert paths(context.files) == ["AGENTS.md", "svc/AGENTS.md"]
    assert context.system_prompt == "Project prompt"

    write(projects / "plain" / "AGENTS.md", "plain")
    plain = load_server_context(projects, "plain")
    assert plain.config == {}
    assert plain.system_prompt is None
    assert paths(plain.files) == ["plain/AGENTS.md"]


# --- client project_context -------------------------------------------------------------


def test_validate_project_context_accepts_good_items() -> None:
    items = [
        {"path": "AGENTS.md", "content": "root"},
        {"path": "services/billing/AGENTS.md", "content": "billing", "extra": 1},
    ]
    assert validate_project_context(items) == [
        ContextFile("AGENTS.md", "root"),
        ContextFile("services/billing/AGENTS.md", "billing"),
    ]
    assert validate_project_context(None) == []
    assert validate_project_context([]) == []


@pytest.mark.parametrize(
    "items",
    [
        "AGENTS.md",
        {"path": "AGENTS.md", "content": "x"},
        ["AGENTS.md"],
        [{"path": "README.md", "content": "x"}],
        [{"path": "../AGENTS.md", "content": "x"}],
        [{"path": "a/../AGENTS.md", "content": "x"}],
        [{"path": "/etc/AGENTS.md", "content": "x"}],
        [{"path": "C:/x/AGENTS.md", "content": "x"}],
        [{"path": "a\\AGENTS.md", "content": "x"}],
        [{"path": "a//AGENTS.md", "content": "x"}],
        [{"path": "./AGENTS.md", "content": "x"}],
        [{"path": "a\nb/AGENTS.md", "content": "x"}],
        [{"path": "agents.md", "content": "x"}],
        [{"path": "", "content": "x"}],
        [{"content": "x"}],
        [{"path": "AGENTS.md"}],
        [{"path": "AGENTS.md", "content": 5}],
        [{"path": "AGENTS.md", "content": "a"}, {"path": "AGENTS.md", "content": "b"}],
        [{"path": "a/" * 600 + "AGENTS.md", "content": "x"}],
        [{"path": "AGENTS.md", "content": "x" * (MAX_AGENTS_FILE_BYTES + 1)}],
        [{"path": f"{i}/AGENTS.md", "content": ""} for i in range(MAX_CONTEXT_FILES + 1)],
        [
            {"path": f"{i}/AGENTS.md", "content": "x" * MAX_AGENTS_FILE_BYTES}
            for i in range(MAX_CONTEXT_TOTAL_BYTES // MAX_AGENTS_FILE_BYTES + 1)
        ],
    ],
)
def test_validate_project_context_refuses_bad_items(items: object) -> None:
    with pytest.raises(InvalidInput) as info:
        validate_project_context(items)
    assert info.value.code == "invalid_project_context"


def test_client_and_server_walks_agree(projects: Path) -> None:
    app = projects / "app"
    write(app / "eonyx.json", "{}")
    write(app / "AGENTS.md", "root")
    write(app / "a" / "AGENTS.md", "a")
    client_side = discover_agents_files(app / "a")  # a CLI walking its own cwd
    sent = [f.to_dict() for f in client_side]
    assert validate_project_context(sent) == discover_agents_files(app / "a", boundary=projects)
