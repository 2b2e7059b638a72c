"""Install the real clients the modules are proven with, for the real-client tests.

``python -m taosync.dev install-clients [--dir D] [--env FILE] [--python EXE]…`` reads each
registered client's ``INSTALL = (registry, spec, note)`` (``"npm"`` or ``"pypi"``; the
spec is what npm or pip is given, several requirements separated by spaces) and its
``BINARY``, installs every one in a directory of its own under ``D`` (default
``${XDG_CACHE_HOME:-~/.cache}/taosync-clients``) — an npm prefix, or a venv, as PyPI pins
clash — and links each binary into ``D/bin``. A directory named by a hash of the
registry, the spec and (for PyPI) the interpreter is reused while its binary answers
``--version``, so a second run on the same machine installs nothing.

It prints one line per client: ``installed``, ``cached``, ``not installable: why`` (the
client needs what this machine lacks, e.g. a newer Python than any found) or
``FAILED: why``; exits 1 when one FAILED. ``--env FILE`` gets the settings the tests read:
``PATH`` with ``D/bin`` first, and ``TAOSYNC_REAL_CLIENTS_UNAVAILABLE`` naming the binaries
that are not installable here (their tests skip, by name, even when
``TAOSYNC_REAL_CLIENTS=required`` makes every other missing binary a failure). Clients
with ``INSTALL = None`` (MCP-only apps: no binary runs here) are named and passed over.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REGISTRIES = ("npm", "pypi")
#: interpreters tried, after the one running this, for a PyPI client that needs a newer one
NEWER_PYTHONS = ("python3.14", "python3.13", "python3.12")
#: what the tests read: ``required`` turns a missing binary into a failure
REQUIRED_VAR = "TAOSYNC_REAL_CLIENTS"
#: binaries the installer found not installable here (comma-separated)
UNAVAILABLE_VAR = "TAOSYNC_REAL_CLIENTS_UNAVAILABLE"
#: a node client's first start on a loaded 2-core machine took minutes: a slow answer
#: is waited for, not taken for a broken install (that would reinstall it)
VERSION_TIMEOUT = 300.0


@dataclass(frozen=True)
class Pin:
    """One client as its module pins it."""

    id: str
    registry: str
    spec: str
    note: str
    binary: str

    @property
    def requirements(self) -> list[str]:
        return self.spec.split()


@dataclass(frozen=True)
class Outcome:
    """What became of one client: ``status`` is installed, cached, not installable or
    FAILED; ``binary`` its executable when it runs."""

    pin: Pin
    status: str
    why: str = ""
    binary: Path | None = None
    seconds: float = 0.0

    def line(self) -> str:
        why = f": {self.why}" if self.why else ""
        took = f" ({self.seconds:.0f} s)" if self.status == "installed" else ""
        return f"{self.pin.id:<14} {self.pin.spec:<44} {self.status}{why}{took}"


def pin_of(module) -> Pin | None:
    """The module's ``INSTALL`` as a :class:`Pin`; None for ``INSTALL = None`` (an app
    with no binary here). ValueError naming the module for any other shape."""
    install = getattr(module, "INSTALL", None)
    if install is None:
        return None
    if (not isinstance(install, tuple) or len(install) != 3
            or not all(isinstance(part, str) for part in install)):
        raise ValueError(f"client {module.ID!r}: INSTALL must be (registry, spec, note) "
                         f"strings or None, not {install!r}")
    registry, spec, note = install
    if registry not in REGISTRIES:
        raise ValueError(f"client {module.ID!r}: INSTALL registry {registry!r} is none of "
                         f"{', '.join(REGISTRIES)}")
    if not spec.strip():
        raise ValueError(f"client {module.ID!r}: INSTALL names no package")
    binary = getattr(module, "BINARY", "")
    if not binary:
        raise ValueError(f"client {module.ID!r}: INSTALL without BINARY (the executable "
                         "the tests run)")
    return Pin(module.ID, registry, spec.strip(), note, binary)


def pins(modules) -> tuple[list[Pin], list[str]]:
    """Every module's pin, and the ids of those with nothing to install."""
    found: list[Pin] = []
    none: list[str] = []
    for module in modules:
        pin = pin_of(module)
        if pin is None:
            none.append(module.ID)
        else:
            found.append(pin)
    return found, none


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "taosync-clients"


def python_version(python: str) -> str | None:
    """``major.minor.micro`` of the interpreter ``python``, None when it does not run
    (e.g. a pyenv shim for a version that is not selected)."""
    try:
        done = subprocess.run([python, "-c", "import sys;print(*sys.version_info[:3],sep='.')"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def slot(root: Path, pin: Pin, python_tag: str = "") -> Path:
    """The directory a pin installs into: its id and a hash of everything that makes the
    install differ (registry, spec, the interpreter's version for a venv)."""
    digest = hashlib.sha256("\0".join((pin.registry, pin.spec, python_tag)).encode())
    return root / f"{pin.id}-{digest.hexdigest()[:12]}"


def executable(place: Path, pin: Pin) -> Path:
    """Where the pin's binary sits once installed into ``place``."""
    if pin.registry == "npm":
        return place / "node_modules" / ".bin" / pin.binary
    return place / "bin" / pin.binary


def version_problem(binary: Path) -> str:
    """What keeps ``binary --version`` from exiting 0 ("" when it does: an install that is
    there and works). It runs in an empty throwaway home (a client may write its config on
    any start: shell-gpt does, after asking for a key unless ``OPENAI_API_KEY`` is set,
    which it is here)."""
    import tempfile

    if not os.access(binary, os.X_OK):
        return "not there"
    with tempfile.TemporaryDirectory(prefix="taosync-version-") as home:
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("XDG_")}
        env.update(HOME=home, NO_COLOR="1",
                   OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY", "version-check"))
        try:
            done = subprocess.run([str(binary), "--version"], capture_output=True, env=env,
                                  stdin=subprocess.DEVNULL, timeout=VERSION_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"--version did not answer in {VERSION_TIMEOUT:.0f} s"
        except OSError as exc:
            return f"--version: {exc.strerror}"
    return "" if done.returncode == 0 else f"--version exited {done.returncode}"


def runs(binary: Path) -> bool:
    return not version_problem(binary)


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(kept[-lines:])[-400:] or "no output"


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` run to its end; a program that is not there exits 127 saying so."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: {exc.strerror}")


def needed_python(pin: Pin, pip_output: str) -> str | None:
    """The Requires-Python pip refused (``>=3.12``), when that is why it installed
    nothing: of the pinned version if pip lists the versions it ignored (an index), else
    the last it lists, or the one it names (a package it found only one way to get)."""
    named = re.search(r"requires a different Python: \S+ not in '([^']+)'", pip_output)
    if named:
        return named.group(1)
    if "require a different python version" not in pip_output.lower():
        return None
    pinned = re.search(r"==\s*([^\s;,]+)", pin.requirements[0])
    found = re.findall(r"([^\s:;]+) Requires-Python ([^\s;]+)", pip_output)
    for version, needs in found:
        if pinned and version == pinned.group(1):
            return needs
    return found[-1][1] if found else ">= a newer Python"


def by_hand(pin: Pin) -> tuple[str, str]:
    """README's install line for ``pin`` into ``DIR``, and where its binary lands."""
    packages = " ".join(shlex.quote(r) for r in pin.requirements)
    if pin.registry == "npm":
        return f"npm install --prefix DIR {packages}", f"DIR/node_modules/.bin/{pin.binary}"
    return f"python3 -m venv DIR && DIR/bin/pip install {packages}", f"DIR/bin/{pin.binary}"


def install_npm(pin: Pin, place: Path) -> str:
    """npm install into the prefix ``place`` without package scripts; when the binary does
    not run so, ``npm rebuild`` runs them (a postinstall that fetches or links the real
    binary). Returns what went wrong, "" when it runs."""
    done = _run(["npm", "install", "--prefix", str(place), "--ignore-scripts", "--no-audit",
                 "--no-fund", "--loglevel=error", *pin.requirements])
    if done.returncode != 0:
        return f"npm install: {_tail(done.stderr + done.stdout)}"
    if runs(executable(place, pin)):
        return ""
    done = _run(["npm", "rebuild", "--prefix", str(place), "--loglevel=error"])
    if done.returncode != 0:
        return f"npm rebuild: {_tail(done.stderr + done.stdout)}"
    return "" if runs(executable(place, pin)) else f"{pin.binary} --version fails after install"


def _own_pip() -> bool:
    """Whether the running interpreter has a pip that can install into another one
    (``pip --python``, pip 22.3+)."""
    try:
        from pip import __version__
    except ImportError:
        return False
    return tuple(int(part) for part in __version__.split(".")[:2]) >= (22, 3)


def install_pypi(pin: Pin, place: Path, python: str) -> tuple[str, str | None]:
    """A venv at ``place`` made by ``python`` and pip install into it — by this
    interpreter's pip when it can (``pip --python``: the venv then needs no pip of its own,
    which is most of the time a venv takes to make), else by the venv's. Returns (what
    went wrong or "", the Requires-Python pip refused when that is why)."""
    own = _own_pip()
    done = _run([python, "-m", "venv", *(["--without-pip"] if own else []), str(place)])
    if done.returncode != 0:
        return f"venv: {_tail(done.stderr + done.stdout)}", None
    target = str(place / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", target] if own else [target, "-m", "pip"]
    done = _run([*pip, "install", "-q", "--disable-pip-version-check", *pin.requirements])
    if done.returncode != 0:
        output = done.stderr + done.stdout
        return f"pip install: {_tail(output)}", needed_python(pin, output)
    ok = runs(executable(place, pin))
    return ("" if ok else f"{pin.binary} --version fails after install"), None


def install_one(pin: Pin, root: Path, pythons: list[str]) -> Outcome:
    """One client: cached when its directory's binary runs (for a PyPI client, the
    directory of any of ``pythons``), else installed afresh (a broken leftover removed
    first). A PyPI client that needs a newer Python tries each of ``pythons`` in turn;
    none that fits makes it "not installable"."""
    start = time.monotonic()
    if pin.registry == "npm":
        candidates = [("", "")]
    else:
        candidates = [(p, v) for p in pythons if (v := python_version(p))]
    places = [(python, slot(root, pin, version)) for python, version in candidates]
    problems = {}
    for _, place in places:  # an install made by any of them is good
        problem = version_problem(executable(place, pin))
        if not problem:
            return Outcome(pin, "cached", binary=executable(place, pin))
        if place.exists():
            problems[place] = problem
    refused: str | None = None
    why = "no Python interpreter runs" if not candidates else ""
    for python, place in places:
        binary = executable(place, pin)
        shutil.rmtree(place, ignore_errors=True)
        place.parent.mkdir(parents=True, exist_ok=True)
        if pin.registry == "npm":
            why = install_npm(pin, place)
        else:
            why, refused = install_pypi(pin, place, python)
        if not why:  # saying why a leftover was replaced: a cache that never hits shows
            replaced = f"replaced {place.name} ({problems[place]})" if place in problems else ""
            return Outcome(pin, "installed", replaced, binary=binary,
                           seconds=time.monotonic() - start)
        shutil.rmtree(place, ignore_errors=True)
        if refused is None:  # a failure another interpreter would not cure
            break
    if refused is not None:
        tried = ", ".join(f"{p} ({v})" for p, v in candidates)
        absent = [p for p in pythons if p not in {c for c, _ in candidates}]
        absent_text = f"; {', '.join(absent)} not found or not running" if absent else ""
        return Outcome(pin, "not installable", f"needs Python {refused}; tried {tried}"
                       f"{absent_text}", seconds=time.monotonic() - start)
    return Outcome(pin, "FAILED", why, seconds=time.monotonic() - start)


def link(root: Path, outcomes: list[Outcome]) -> Path:
    """``root/bin`` holding a link to each binary that runs, and nothing else."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    wanted = {o.pin.binary: o.binary for o in outcomes if o.binary is not None}
    for entry in bin_dir.iterdir():
        if entry.name not in wanted:
            entry.unlink()
    for name, target in wanted.items():
        temporary = bin_dir / f".{name}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(target)
        os.replace(temporary, bin_dir / name)
    return bin_dir


def env_text(bin_dir: Path, outcomes: list[Outcome]) -> str:
    """The shell settings the real-client tests read."""
    unavailable = ",".join(o.pin.binary for o in outcomes if o.status == "not installable")
    return ("# python -m taosync.dev install-clients: source this before the real-client "
            "tests\n"
            f"export PATH={shlex.quote(str(bin_dir))}:\"$PATH\"\n"
            f"export {UNAVAILABLE_VAR}={shlex.quote(unavailable)}\n")


def install_all(pinned: list[Pin], root: Path, pythons: list[str], jobs: int,
                say=print) -> list[Outcome]:
    """Every pin installed (``jobs`` at a time: installs wait on the network more than on
    the CPU), each reported by ``say`` as it finishes; outcomes in registry order. One run
    at a time per ``root``: a second waits for the first, then finds its installs."""
    def one(pin: Pin) -> Outcome:
        outcome = install_one(pin, root, pythons)
        say(outcome.line())
        return outcome

    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock, ThreadPoolExecutor(max(1, jobs)) as pool:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run on this machine waits, not collides
        return list(pool.map(one, pinned))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m taosync.dev install-clients",
        description="Install the real clients the client modules pin (INSTALL) for the "
                    "real-client tests, cached between runs.")
    parser.add_argument("--dir", type=Path, default=None,
                        help="install and cache here (default: "
                             "${XDG_CACHE_HOME:-~/.cache}/taosync-clients)")
    parser.add_argument("--env", type=Path, default=None,
                        help="write the settings the tests read (PATH, "
                             f"{UNAVAILABLE_VAR}) to this file, for `.`")
    parser.add_argument("--python", action="append", default=[],
                        help="another interpreter for PyPI clients that need a newer "
                             "Python (may repeat; python3.12+ on PATH are tried anyway)")
    parser.add_argument("--only", action="append", default=[],
                        help="install only this client id (may repeat)")
    parser.add_argument("--jobs", type=int, default=4, help="installs at a time (4)")
    args = parser.parse_args(argv)
    from taosync.clients.registry import all as all_clients

    modules = [m for m in all_clients().values() if not args.only or m.ID in args.only]
    unknown = sorted(set(args.only) - {m.ID for m in modules})
    if unknown:
        print(f"unknown client id: {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        pinned, none = pins(modules)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    root = (args.dir or default_dir()).resolve()
    pythons = [sys.executable, *args.python, *NEWER_PYTHONS]
    print(f"installing {len(pinned)} clients into {root}", flush=True)
    outcomes = install_all(pinned, root, pythons, args.jobs,
                           say=lambda line: print(line, flush=True))
    for client_id in none:
        print(f"{client_id:<14} {'(INSTALL = None)':<44} no binary to install")
    bin_dir = link(root, outcomes)
    if args.env:
        args.env.write_text(env_text(bin_dir, outcomes), encoding="utf-8")
    else:
        sys.stdout.write(env_text(bin_dir, outcomes))
    missing = [o for o in outcomes if o.status == "not installable"]
    failed = [o for o in outcomes if o.status == "FAILED"]
    if missing:
        print("not installable here (their tests skip, named): "
              + ", ".join(f"{o.pin.id} ({o.pin.binary})" for o in missing))
    if failed:
        print("FAILED: " + ", ".join(o.pin.id for o in failed), file=sys.stderr)
    return 1 if failed else 0
