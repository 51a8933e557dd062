"""The opt-in sandbox of a trusted child (``--sabot-sandbox``), built on bubblewrap.

bubblewrap (``bwrap``, the Debian package ``bubblewrap``; the sandbox of Flatpak) starts the
child in namespaces of its own, so it sees only what the sandbox mounts:

* **no network**: a network namespace with only its own loopback interface. The gateway
  is out of reach; the child's model endpoints are served on that loopback by the child
  itself and carried over the supervisor's pipe (``pytest_sabot.trusted.proxy``), which is
  its only door. Abstract unix sockets are per network namespace; ``/run`` and ``/var``
  are not mounted, ``/tmp`` is a fresh tmpfs;
* **a read-only view of its own code and environment**: ``/usr`` and ``/etc``, the
  interpreter, its site-packages, and the directories on the child's ``PYTHONPATH`` (the
  source checkout of pytest-sabot, the user's package), all read-only;
* **no view of the evidence**: the directories given as ``hidden`` (the standard's
  ``tasks/``, the output directory, the spend ledger's directory and the embedded model's
  source, :func:`model_engine`) are empty tmpfs in the child's view, wherever they sit
  inside what it may read;
* **no view of the parent**: a PID namespace in which the child is process 1 (it has no
  parent there) with its own ``/proc``, which lists only the sandbox's processes; its own
  IPC, UTS and cgroup namespaces; a user namespace that may not create further ones
  (``--disable-userns``), every capability dropped; it dies with its parent, and whatever
  it started dies with it.

The working directory is an empty tmpfs, ``/sandbox``, and ``/tmp`` another: what the
child writes there is gone with it.
:func:`unavailable` tells, before anything runs, why this machine cannot provide the
sandbox (no bwrap, user namespaces refused, ...), by starting one and importing the child's
module in it.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_sabot.core.registry import DISTRIBUTION

BWRAP = "bwrap"
CHILD_CWD = "/sandbox"
"""The child's working directory: an empty tmpfs of its own."""
_SYSTEM = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
_PROBE_TIMEOUT_S = 60.0


def find_bwrap() -> str | None:
    """The bubblewrap executable on PATH, if installed."""
    return shutil.which(BWRAP)


def _interpreter_dirs() -> list[Path]:
    """What the interpreter needs: its prefixes (a virtualenv's and its base's, the real
    location of the executable) and its site-packages."""
    found = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix),
             Path(os.path.realpath(sys.executable)).parent.parent]
    found += [Path(p) for p in site.getsitepackages()]
    user_site = site.getusersitepackages()
    if user_site:
        found.append(Path(user_site))
    return found


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


@dataclass(frozen=True)
class Sandbox:
    """How the child is wrapped; ``hidden``: directories it must see empty (and files it
    must see empty)."""

    hidden: tuple[Path, ...] = ()
    bwrap: str = field(default_factory=lambda: find_bwrap() or BWRAP)

    def readable(self, env: Mapping[str, str]) -> list[Path]:
        """The directories mounted read-only beside the system's: the interpreter's and
        the child's PYTHONPATH (both as given and resolved), existing ones only."""
        paths = _interpreter_dirs()
        paths += [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        out: list[Path] = []
        for path in paths:
            for form in (path.absolute(), Path(os.path.realpath(path))):
                if form.exists() and form not in out:
                    out.append(form)
        return out

    def arguments(self, env: Mapping[str, str]) -> list[str]:
        """bwrap's arguments up to (not including) the command."""
        args = [self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
                "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL"]
        system = [Path(p) for p in _SYSTEM]
        for path in system:
            if path.is_symlink():
                args += ["--symlink", os.readlink(path), str(path)]
            elif path.is_dir():
                args += ["--ro-bind", str(path), str(path)]
        bound = [p for p in system if p.is_dir() and not p.is_symlink()]
        # A fresh /tmp first, so code kept under the host's /tmp is bound over it.
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for path in sorted(self.readable(env), key=lambda p: len(p.parts)):
            if not _inside(path, bound):
                args += ["--ro-bind", str(path), str(path)]
                bound.append(path)
        for path in self.hidden:
            for form in sorted({path.absolute(), Path(os.path.realpath(path))}):
                if not _inside(form, bound):
                    continue  # not in the child's view anyway
                if form.is_dir():
                    args += ["--tmpfs", str(form)]
                elif form.exists():
                    args += ["--ro-bind", os.devnull, str(form)]
        args += ["--tmpfs", CHILD_CWD, "--chdir", CHILD_CWD]
        return args

    def wrap(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[str]:
        """The command that runs ``argv`` in the sandbox (``cwd``, the parent's fresh
        directory, is not shown to the child: its working directory is its own)."""
        del cwd
        return [*self.arguments(env), "--", *argv]


def model_engine() -> Path:
    """The embedded model's source folder (``pytest_sabot/sim``), found without importing it.

    Its answers are a deterministic function of the cell's seed, its persona (the weak tier
    under O4) and the request; a child holding the engine could replay each answer for
    every seed and persona and learn its cell's (SPEC.md I164). The child never needs it:
    the model answers in the parent, behind the gateway."""
    return Path(__file__).resolve().parent.parent / "sim"


def evidence(out: Path, ledger: Path, task_dirs: Iterable[Path],
             code_dirs: Iterable[Path], outputs: Iterable[Path] = (),
             own: Iterable[str] = ()) -> tuple[Path, ...]:
    """What a sandboxed child must not see of a session: the standard's ``tasks/``, the
    embedded model's source (:func:`model_engine`), the output directory, the spend
    ledger's directory (the parent of the output by default, where other sessions' records
    are) and ``outputs`` (the default output roots, e.g. ``reports/`` of the working
    directory). When the ledger's directory also holds the
    child's own code (a project whose ``out/`` sits beside the agent's package), only what
    a session writes there is hidden: the ledger and history files, and every directory
    holding records (``cells/``, ``run.json`` or ``results.json``). ``own``: the top-level
    module of the child's target, kept in view wherever it sits (checkout_extras)."""
    task_dirs, code_dirs = list(task_dirs), list(code_dirs)
    # A repository holding the standard or the child's code holds every task file in its
    # history: its .git goes out of view with the tasks. Beside the tasks, the standard's
    # matrices (cells/: the anchors name every planted value) and its mappings.
    standard = [t.parent / part for t in task_dirs for part in ("cells", "mappings")
                if (t.parent / part).is_dir()]
    hidden = [*task_dirs, *standard, *git_dirs([*task_dirs, *code_dirs]), model_engine(),
              *checkout_extras(code_dirs, own), out, *outputs]
    code = [Path(os.path.realpath(p)) for p in code_dirs]
    real_ledger = Path(os.path.realpath(ledger))
    if not any(p == real_ledger or real_ledger in p.parents for p in code):
        return (*hidden, ledger)
    try:
        entries = sorted(ledger.iterdir())
    except OSError:
        return tuple(hidden)
    for entry in entries:
        written = entry.name.startswith(("spend-ledger.json", "history.sqlite"))
        if written or _holds_records(entry):
            hidden.append(entry)
    return tuple(hidden)


def _holds_records(entry: Path) -> bool:
    """Whether a directory is a session's output: its board or a lab run's record, its
    session manifests, or a ``cells/`` folder of cell records (a checkout of the standard
    has a ``cells/`` of matrices, which is no output)."""
    if not entry.is_dir():
        return False
    if any((entry / mark).exists() for mark in ("run.json", "results.json", "sessions")):
        return True
    cells = entry / "cells"
    try:
        return cells.is_dir() and any(
            (c / "events.jsonl").exists() or (c / "events.jsonl.partial").exists()
            for c in cells.iterdir() if c.is_dir())
    except OSError:
        return False


def checkout_extras(code_dirs: Iterable[Path] = (), own: Iterable[str] = ()) -> list[Path]:
    """What a source checkout of pytest-sabot holds beside its package: the standard's
    files, the tests and docs (which quote planted values), the scripts. The child imports
    the package from the checkout, so the checkout is in its view; everything in it but
    the package and what holds the interpreter or the child's own code (``own``: the
    top-level module of its target, a package or a ``.py`` file) is hidden. Nothing when
    the package is installed (site-packages holds the package alone)."""
    package = Path(__file__).resolve().parent.parent
    checkout = package.parent
    try:
        project = tomllib.loads((checkout / "pyproject.toml").read_text(encoding="utf-8"))
        entries = sorted(checkout.iterdir())
    except (OSError, tomllib.TOMLDecodeError):
        return []
    if project.get("project", {}).get("name") != DISTRIBUTION:
        return []
    mine = set(own)
    keep = [Path(os.path.realpath(p)) for p in (*_interpreter_dirs(), *code_dirs)]
    keep = [k for k in keep if k != checkout and checkout in k.parents]
    out: list[Path] = []
    for entry in entries:
        real = Path(os.path.realpath(entry))
        if real == package or entry.name == ".git":  # the package; .git: git_dirs()
            continue
        if entry.name in mine or (entry.suffix == ".py" and entry.stem in mine):
            continue  # the child's own module, kept beside the checkout's files
        if any(k == real or real in k.parents for k in keep):
            continue  # it holds the interpreter (a .venv) or the child's own code
        out.append(entry)
    return out


def git_dirs(paths: Iterable[Path]) -> list[Path]:
    """The ``.git`` (a folder, or a worktree's file) of each repository holding one of
    ``paths``, each once."""
    found: list[Path] = []
    for path in paths:
        for folder in (Path(path).absolute(), *Path(path).absolute().parents):
            candidate = folder / ".git"
            if candidate.exists():
                if candidate not in found:
                    found.append(candidate)
                break
    return found


def unavailable(sandbox: Sandbox, env: Mapping[str, str], python: str = sys.executable,
                module: str = "pytest_sabot.trusted.child") -> str | None:
    """Why this machine cannot run the child in ``sandbox`` (None when it can): bwrap is
    missing, not Linux, or a sandbox started here cannot import the child's module."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux namespaces; this is {sys.platform}"
    if find_bwrap() is None:
        return ("bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get "
                "install bubblewrap; Fedora: dnf install bubblewrap)")
    command = sandbox.wrap([python, "-c", f"import {module}"], env, Path(CHILD_CWD))
    try:
        done = subprocess.run(command, env=dict(env), capture_output=True, text=True,
                              timeout=_PROBE_TIMEOUT_S, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox here: {exc}"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        return ("bubblewrap could not start a sandbox here (user namespaces may be "
                f"disabled, e.g. kernel.unprivileged_userns_clone=0 or an AppArmor "
                f"restriction): {why[-1] if why else f'exit {done.returncode}'}")
    return None
