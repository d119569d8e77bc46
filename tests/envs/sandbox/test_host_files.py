"""Programs see the interpreter and its standard library, not the host's files: not the project's
sources (reference solutions, hidden tests), not installed packages, not home directories."""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

import mrlm.envs
from mrlm.envs.sandbox import Limits, Sandbox, Status
from mrlm.envs.sandbox.forkserver import rootfs
from mrlm.envs.sandbox.pool import caller_import_paths

#: Holds reference solutions and hidden tests: the file a program must never read.
PROBLEMS = Path(mrlm.envs.__file__).resolve().parent / "code" / "problems.py"
REPO = Path(__file__).resolve().parents[3]
STDLIB = [
    "json",
    "decimal",
    "fractions",
    "sqlite3",
    "datetime",
    "collections",
    "re",
    "math",
    "itertools",
    "functools",
    "heapq",
    "string",
    "random",
    "typing",
    "dataclasses",
    "unittest",
]


@pytest.fixture(autouse=True)
def _private(sandbox: Sandbox) -> None:
    if not sandbox.isolation.private_filesystem:
        pytest.skip(f"no private file system here: {sandbox.isolation.warnings}")


def run_json(sandbox: Sandbox, source: str, limits: Limits | None = None) -> object:
    """Run ``source`` (dedented), which prints one JSON value; returns the value."""
    result = sandbox.run(textwrap.dedent(source), limits=limits)
    assert result.status is Status.OK, result
    return json.loads(result.stdout)


def test_the_report_names_the_layer(sandbox: Sandbox) -> None:
    assert "private_filesystem" in sandbox.isolation.active()


def test_project_sources_cannot_be_read_or_imported(sandbox: Sandbox) -> None:
    assert PROBLEMS.is_file()  # the host has it: the sandbox must not
    outcome = run_json(
        sandbox,
        f"""
        import json, os
        found = {{}}
        for path, attempt in (({str(PROBLEMS)!r}, lambda path: open(path).read(100)),
                              ({str(PROBLEMS.parent)!r}, os.listdir), ({str(REPO)!r}, os.listdir)):
            try:
                found[path] = attempt(path)
            except OSError as error:
                found[path] = type(error).__name__
        try:
            import mrlm.envs.code.problems
            found['import'] = 'imported'
        except ImportError as error:
            found['import'] = type(error).__name__
        print(json.dumps(found))
        """,
    )
    assert outcome == {
        str(PROBLEMS): "FileNotFoundError",
        str(PROBLEMS.parent): "FileNotFoundError",
        str(REPO): "FileNotFoundError",
        "import": "ModuleNotFoundError",
    }


def test_host_directories_and_packages_cannot_be_listed(sandbox: Sandbox) -> None:
    venv_packages = os.path.realpath(sysconfig.get_path("purelib"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base_packages = os.path.join(os.path.realpath(sys.base_prefix), "lib", version, "site-packages")
    paths = ["/work", "/root", "/home", "/srv", "/opt", "/var", venv_packages, base_packages]
    paths += caller_import_paths()  # this process's site-packages and source trees
    assert os.path.isdir(venv_packages) and os.listdir(venv_packages)
    listed = run_json(
        sandbox,
        f"""
        import json, os
        listed = {{}}
        for path in {paths!r}:
            try:
                listed[path] = os.listdir(path)
            except OSError as error:
                listed[path] = type(error).__name__
        print(json.dumps(listed))
        """,
    )
    assert isinstance(listed, dict)
    for path, entries in listed.items():
        # Gone, not listable (the way through to the interpreter), or an empty cover.
        assert entries in ("FileNotFoundError", "PermissionError", []), (path, entries)


@pytest.mark.slow
def test_a_walk_of_the_whole_tree_finds_nothing_of_the_project(sandbox: Sandbox) -> None:
    limits = Limits(wall_time_s=60.0, cpu_time_s=60.0)
    walked = run_json(
        sandbox,
        """
        import json, os
        seen, found = 0, []
        for root, directories, files in os.walk('/'):
            if root == '/':
                directories[:] = [name for name in directories if name not in ('proc', 'sys')]
            seen += len(directories) + len(files)
            found += [os.path.join(root, name) for name in directories + files
                      if name in ('problems.py', 'pyseccomp.py') or name.startswith(('mrlm', '_mrlm', '_editable', '__editable__'))]
            if seen > 2_000_000:
                break
        print(json.dumps({'seen': seen, 'found': found}))
        """,
        limits,
    )
    assert isinstance(walked, dict)
    assert walked["found"] == [] and 1000 < walked["seen"] <= 2_000_000, walked


def test_the_standard_library_imports_and_works(sandbox: Sandbox) -> None:
    result = sandbox.run(
        f"import {', '.join(STDLIB)}\n"
        "print(sqlite3.connect(':memory:').execute('select 6 * 7').fetchone()[0])\n"
        "print(decimal.Decimal('0.1') + decimal.Decimal('0.2'), fractions.Fraction(1, 3) + fractions.Fraction(1, 6))\n"
        "print(datetime.date(2024, 1, 1).isoformat(), heapq.nsmallest(2, [3, 1, 2]), re.sub('a', 'b', 'aa'))\n",
        limits=Limits(wall_time_s=5.0),
    )
    assert result.status is Status.OK, result
    assert result.stdout == "42\n0.3 1/2\n2024-01-01 [1, 2] bb\n"


def test_the_interpreter_runs_in_a_subprocess_with_allow_exec(sandbox: Sandbox) -> None:
    result = sandbox.run(
        textwrap.dedent(
            """
            import subprocess, sys
            child = subprocess.run(
                [sys.executable, '-c', 'import json, sqlite3, decimal; print(json.dumps("child ok"))'],
                capture_output=True, text=True,
            )
            print(child.returncode, child.stdout.strip(), child.stderr.strip()[-300:])
            """
        ),
        limits=Limits(wall_time_s=10.0, allow_exec=True),
    )
    assert (result.status, result.stdout) == (Status.OK, '0 "child ok" \n'), result


def test_package_directories_are_found_where_interpreters_put_them(tmp_path: Path) -> None:
    for relative in (
        "lib/python3.11/site-packages",
        "lib/python3/dist-packages",
        "local/lib/python3.12/dist-packages",
        "lib64/python3.9/site-packages",
    ):
        (tmp_path / relative).mkdir(parents=True)
    (tmp_path / "lib/python3.11/lib-dynload").mkdir()
    found = {os.path.relpath(path, tmp_path) for path in rootfs._package_dirs(str(tmp_path))}
    assert found == {
        "lib/python3.11/site-packages",
        "lib/python3/dist-packages",
        "local/lib/python3.12/dist-packages",
        "lib64/python3.9/site-packages",
    }


def test_covers_never_hide_what_the_interpreter_needs(tmp_path: Path) -> None:
    tree = tmp_path / "prefix"
    (tree / "lib/python3.11/site-packages").mkdir(parents=True)
    (tree / "src/project").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    stdlib = str(tree / "lib/python3.11")
    hide = [str(tree / "src/project"), str(outside), str(tree), stdlib]
    masks = rootfs._masks([str(tree)], hide, {stdlib + "/os.py"})
    assert masks == [str(tree / "lib/python3.11/site-packages"), str(tree / "src/project")]
