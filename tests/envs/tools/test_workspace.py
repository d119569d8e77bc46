"""The files tool stays inside its per-episode root whatever paths and links it is given."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest

from mrlm.envs.tools.registry import ToolRegistry
from mrlm.envs.tools.workspace import PathError, Workspace, WorkspaceLimits, files_tool


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    space = Workspace(WorkspaceLimits(max_file_bytes=1000, max_total_bytes=3000, max_files=5))
    space.reset({"data/sales.csv": "a,b\n1,2\n", "notes.txt": "hello"})
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret", encoding="utf-8")
    root = space.root
    assert root is not None
    os.symlink(outside, os.path.join(root, "file_link"))  # planted links: the tool never makes them
    os.symlink(tmp_path, os.path.join(root, "dir_link"))
    os.symlink("notes.txt", os.path.join(root, "inner_link"))  # points inside, still refused
    os.symlink("data", os.path.join(root, "inner_dir_link"))
    yield space
    space.close()


def test_list_read_write(workspace: Workspace) -> None:
    assert workspace.list_dir() == (
        "data/\ndir_link (symbolic link, not followed)\nfile_link (symbolic link, not followed)\n"
        "inner_dir_link (symbolic link, not followed)\ninner_link (symbolic link, not followed)\nnotes.txt (5 bytes)"
    )
    assert workspace.list_dir("data") == workspace.list_dir("./data/") == "sales.csv (8 bytes)"
    assert workspace.read("data/sales.csv") == "a,b\n1,2\n"
    assert workspace.write("out/deep/result.txt", "42") == "wrote 2 bytes to out/deep/result.txt"
    assert workspace.read("out//deep/./result.txt") == "42"
    assert workspace.write("notes.txt", "replaced") == "wrote 8 bytes to notes.txt"
    assert workspace.read("notes.txt") == "replaced"
    assert workspace.list_dir("out/deep") == "result.txt (2 bytes)"
    workspace.write("empty/x", "")
    assert workspace.read("empty/x") == ""


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "'..' is not allowed"),
        ("data/../../secret.txt", "'..' is not allowed"),
        ("..", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("//etc/passwd", "absolute paths are not allowed"),
        ("~/.ssh/id_rsa", "absolute paths are not allowed"),
        ("file_link", "outside the workspace"),
        ("dir_link/secret.txt", "outside the workspace"),
        ("inner_link", "is a symbolic link"),
        ("inner_dir_link/sales.csv", "is a symbolic link"),
        ("notes.txt\x00.png", "NUL byte"),
        ("a\nb", "control characters"),
        ("x" * 201, "too long"),
        ("a/" * 9 + "f", "too deep"),
        ("é" * 128, "longer than 255 bytes"),
        ("\udcff", "unpaired surrogates"),
        (".", "names the workspace itself"),
        ("", "names the workspace itself"),
        ("missing.txt", "'missing.txt' does not exist"),
        ("notes.txt/x", "'notes.txt' is not a directory"),
        ("data", "is a directory"),
    ],
)
def test_hostile_reads_are_refused(workspace: Workspace, path: str, message: str) -> None:
    with pytest.raises(PathError) as caught:
        workspace.read(path)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.txt", "'..' is not allowed"),
        ("/tmp/escape.txt", "absolute paths"),
        ("file_link", "outside the workspace"),
        ("dir_link/new.txt", "outside the workspace"),
        ("inner_link", "is a symbolic link"),
        ("inner_dir_link/new.txt", "is a symbolic link"),
        ("data", "is a directory"),
        ("notes.txt/new.txt", "'notes.txt' is not a directory"),
        ("bad\x00name", "NUL byte"),
    ],
)
def test_hostile_writes_are_refused_and_nothing_leaks_out(
    workspace: Workspace, tmp_path: Path, path: str, message: str
) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(PathError) as caught:
        workspace.write(path, "pwned")
    assert message in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "secret.txt").read_text(encoding="utf-8") == "top secret"


def test_links_through_the_realpath_check_are_still_refused(workspace: Workspace, monkeypatch) -> None:
    # Even if the realpath check were fooled (say, a link swapped in after it), O_NOFOLLOW holds.
    monkeypatch.setattr(os.path, "realpath", lambda path: workspace.root)
    for path in ("file_link", "dir_link/secret.txt"):
        with pytest.raises(PathError, match="symbolic link"):
            workspace.read(path)
        with pytest.raises(PathError, match="symbolic link"):
            workspace.write(path, "x")
    with pytest.raises(PathError, match="symbolic link"):
        workspace.list_dir("dir_link")


def test_size_and_count_limits(workspace: Workspace) -> None:
    with pytest.raises(PathError, match="too large"):
        workspace.write("big.txt", "x" * 1001)
    with pytest.raises(PathError, match="too large"):
        workspace.write("big.txt", "é" * 501)  # counted in bytes, not characters
    with pytest.raises(PathError, match="unpaired surrogates"):
        workspace.write("bad.txt", "\udcff")
    workspace.write("a.txt", "x" * 1000)
    workspace.write("b.txt", "x" * 1000)
    with pytest.raises(PathError, match="at most 3000 bytes"):
        workspace.write("c.txt", "x" * 1000)
    workspace.write("a.txt", "x" * 10)  # replacing a file frees its old size
    workspace.write("c.txt", "x" * 900)
    with pytest.raises(PathError, match="at most 5 files"):
        workspace.write("d.txt", "x")


def test_reads_are_cut_at_the_limit(workspace: Workspace) -> None:
    root = workspace.root
    assert root is not None
    Path(root, "large.bin").write_bytes(b"\xff" + b"y" * 5000)
    text = workspace.read("large.bin")
    assert (
        text.startswith("\ufffd" + "y" * 999) and "file is 5001 bytes; only the first 1000 are shown" in text
    )


def test_special_files_are_refused(workspace: Workspace) -> None:
    root = workspace.root
    assert root is not None
    os.mkfifo(os.path.join(root, "fifo"))
    with pytest.raises(PathError, match="not a regular file"):
        workspace.read("fifo")  # O_NONBLOCK: no hang
    assert "fifo (special file)" in workspace.list_dir()


def test_snapshot_leaves_out_links(workspace: Workspace) -> None:
    assert workspace.snapshot() == {"data/sales.csv": b"a,b\n1,2\n", "notes.txt": b"hello"}


def test_directories_are_fresh_per_episode_and_removed() -> None:
    space = Workspace()
    assert space.root is None
    with pytest.raises(PathError, match="not open"):
        space.read("x")
    space.reset({"a.txt": "1"})
    first = space.root
    assert first is not None and os.path.isdir(first)
    space.reset()
    assert not os.path.exists(first) and space.root != first and space.list_dir() == "(empty directory)"
    second = space.root
    assert second is not None
    copy = pickle.loads(pickle.dumps(space))
    assert copy.root != second and copy.root is not None
    copy.close()
    space.close()
    space.close()  # twice is fine
    assert not os.path.exists(second) and space.root is None


def test_a_dropped_workspace_removes_its_directory() -> None:
    space = Workspace()
    space.reset({"a.txt": "1"})
    root = space.root
    assert root is not None
    del space
    assert not os.path.exists(root)


def test_the_files_tool(workspace: Workspace) -> None:
    registry = ToolRegistry([files_tool(workspace)])
    assert registry.call("files", {"operation": "list"}).content.endswith("notes.txt (5 bytes)")
    assert registry.call("files", {"operation": "read", "path": "notes.txt"}).content == "hello"
    wrote = registry.call("files", {"operation": "write", "path": "n/x.txt", "content": "hi"})
    assert (wrote.ok, wrote.content) == (True, "wrote 2 bytes to n/x.txt")
    refused = registry.call("files", {"operation": "read", "path": "../x"})
    assert (refused.ok, refused.malformed) == (False, False)
    assert (
        registry.call("files", {"operation": "write", "path": "y"}).content
        == "the 'write' operation needs 'content'"
    )
    assert (
        "only used by the 'write'"
        in registry.call("files", {"operation": "read", "path": "y", "content": "z"}).content
    )
    assert registry.call("files", {"operation": "delete", "path": "notes.txt"}).malformed
    assert registry.call("files", {"operation": "read", "path": "p" * 201}).malformed
    assert registry.call("files", {"operation": "write", "path": "z", "content": "x" * 1001}).malformed
