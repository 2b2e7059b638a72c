"""The docs say only what is true: README.md (the user's page) and the reference pages under
docs/ name only commands and options the CLI has, every example in a command's ``--help``
runs with the exit code its help documents, and the claims a user once found false stay
fixed (watch's JSON field, a table row outside its table, the intro's client list,
``apply --no-key`` without ``--dry-run``).

Commands and options come from the click group itself (``taosync.cli``), so a command or
option added, renamed or removed is checked without a line here."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from conftest import EXAMPLE_FLEET, ROOT, TEST_KEY, client_location_vars

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
#: the page lane "errors" writes (docs/troubleshooting.md); README links it
TROUBLESHOOTING = DOCS / "troubleshooting.md"


# -- what the CLI has ---------------------------------------------------------------------

def _group():
    from taosync.cli import main

    return main


def _command(name: str):
    import click

    return _group().get_command(click.Context(_group()), name)


def _commands() -> list[str]:
    from taosync.cli import COMMANDS

    return list(COMMANDS)


def _opts(params) -> set[str]:
    return {opt for p in params for opt in (*p.opts, *p.secondary_opts) if opt.startswith("-")}


def _group_options() -> set[str]:
    return _opts(_group().params) | {"-h", "--help"}


def _params(name: str) -> list:
    """A command's parameters; a command group's (``secret``) with its subcommands'."""
    command = _command(name)
    subs = getattr(command, "commands", {}).values()
    return [*command.params, *(p for sub in subs for p in sub.params)]


def _options(name: str) -> set[str]:
    return _opts(_params(name)) | _group_options()


def _takes_value(opt: str, params) -> bool:
    return any(opt in p.opts and not getattr(p, "is_flag", False) and p.nargs == 1
               for p in params)


# -- what the docs say ---------------------------------------------------------------------

def _spans(text: str) -> list[str]:
    """Each inline code span of a page's prose (a span may run over a line break)."""
    spans = re.findall(r"(?<!`)`([^`]+)`(?!`)", "\n".join(_prose_lines(text)))
    return [span.replace("\n", " ") for span in spans]


def _code(text: str) -> list[str]:
    """The code in a page: each inline code span, and each line of a fenced block (cut at
    its backticks: a message quoting `taosync apply` is two pieces of code)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            out += line.split("`")
    return out + _spans(text)


#: words that follow "taosync" in quoted messages and prose inside code, not commands
#: ("… the backups taosync wrote", "taosync processes", "(… the 256 MiB taosync reads)")
PROSE = {"wrote", "reads", "processes", "from", "as", "changed", "can", "adds", "configures",
         "would"}
#: what the docs name on purpose though it is wrong: a usage error's example
WRONG_ON_PURPOSE = {"taosync status --json --bogus"}
#: shell words that end one command's arguments
ENDS = {"|", "||", "&&", ";", ")", "#", ">", "<", "2>", "…"}
#: a usage line's placeholders and alternatives: `[--to N \| --redo]`, `--by model\|route`
STRIP = "[]()\\\"'`…"


def invocations() -> list[tuple[str, str, list[str], str]]:
    """Every ``taosync …`` in the docs' code: (page, command, options named, the code)."""
    found = []
    group = _group()
    for page in PAGES:
        for code in _code(page.read_text(encoding="utf-8")):
            for m in re.finditer(r"(?<![\w/.$-])taosync(?=\s)", code):
                words = code[m.end():].split()
                command, opts, i = None, [], 0
                while i < len(words):  # global options first, then the command
                    word = words[i].strip(STRIP)
                    if word.startswith("-"):
                        opts.append(word.split("=")[0])
                        i += 2 if _takes_value(word, group.params) else 1
                        continue
                    command = word
                    i += 1
                    break
                if command is None or not re.fullmatch(r"[a-z][a-z-]*", command) \
                        or command in PROSE:
                    continue  # `taosync --help`, `taosync CMD`, "taosync wrote"
                for word in words[i:]:
                    if word in ENDS or word.startswith(("#", ">", "|", "$(")) \
                            or word.endswith(")"):
                        if word.endswith(")") and word.strip(STRIP).startswith("-"):
                            opts.append(word.strip(STRIP).split("=")[0])
                        break
                    for part in word.split("\\|"):
                        part = part.strip(STRIP).rstrip(",.;:")
                        if re.fullmatch(r"--?[A-Za-z][\w-]*(=.*)?", part):
                            opts.append(part.split("=")[0])
                found.append((page.name, command, opts, code))
    return found


def test_every_command_and_option_the_docs_name_exists():
    commands = set(_commands())
    wrong = []
    for page, command, opts, code in invocations():
        if code in WRONG_ON_PURPOSE:
            continue
        if command not in commands:
            wrong.append(f"{page}: `taosync {command}` is no command: {code!r}")
            continue
        known = _options(command)
        wrong += [f"{page}: taosync {command} has no option {opt}: {code!r}"
                  for opt in opts if opt not in known]
    assert not wrong, "\n".join(wrong)


#: options the docs name alone (`--force`) that belong to another program
FOREIGN = {"--fallback-model": "claude", "--skip-trust": "gemini", "--version": "clients",
           "--net": "unshare", "--map-root-user": "unshare", "--ignore-scripts": "npm",
           "--no-deps": "pip", "--basetemp": "pytest", "-n": "pytest", "-k": "pytest",
           "-m": "python / llm", "-p": "codex / gemini / pytest",
           "--hogs": "bench/suite_bench.py", "--dir": "python -m taosync.dev install-clients",
           "--python": "python -m taosync.dev install-clients", "--stat": "git log"}


def test_every_option_named_alone_exists():
    """A span that is only an option (`--no-key`, `--to N`) names an option of some
    taosync command, or of a program FOREIGN names."""
    every = set().union(*(_options(name) for name in _commands()))
    wrong = []
    for page in PAGES:
        for code in _spans(page.read_text(encoding="utf-8")):
            m = re.fullmatch(r"(--?[A-Za-z][\w-]*)(?:[ =][^`]*)?", code.strip())
            if m and m.group(1) not in every and m.group(1) not in FOREIGN:
                wrong.append(f"{page.name}: {code!r}")
    assert not wrong, "no such option:\n" + "\n".join(wrong)


def test_every_command_is_documented():
    """docs/commands.md's table has a row for each command (an alias in its command's row)."""
    from taosync.cli import COMMANDS

    table = (DOCS / "commands.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `taosync ([a-z-]+)", table, re.M)
    aliases = {name for name, target in COMMANDS.items()
               if list(COMMANDS.values()).index(target) != list(COMMANDS).index(name)}
    assert set(rows) == set(COMMANDS) - aliases
    for alias in aliases:
        assert f"(alias `{alias}`)" in table, alias


def test_every_option_is_in_its_commands_row():
    """docs/commands.md's row of each command names every option it has (one of its
    spellings: `--yes` for `-y/--yes`); the global options are in the paragraph above the
    table."""
    table = (DOCS / "commands.md").read_text(encoding="utf-8")
    rows: dict[str, str] = {}  # a group's subcommands each have a row (secret set, get)
    for m in re.finditer(r"^\| `taosync ([a-z-]+).*$", table, re.M):
        rows[m.group(1)] = rows.get(m.group(1), "") + m.group(0)
    missing = []
    for name, row in rows.items():
        named = set(re.findall(r"--?[A-Za-z][\w-]*", row))
        for param in _params(name):
            opts = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("-")]
            if opts and not set(opts) & (named | _group_options()):
                missing.append(f"taosync {name} {'/'.join(opts)}")
    assert not missing, "not in docs/commands.md's table:\n" + "\n".join(missing)
    for opt in sorted(_group_options() - {"-h", "--help", "--version"}):
        assert f"`{opt}" in table or f"/{opt}" in table, opt


def test_the_readme_is_the_users_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, len(lines)
    headings = [line for line in lines if line.startswith("## ")]
    for needed in ("## Install", "## Quick start", "## Everyday commands", "## Documentation"):
        assert needed in headings, needed
    text = "\n".join(lines)
    for install in ("pipx install", "uv tool install", "pip install -e '.[test]'"):
        assert install in text, install
    for page in PAGES[1:]:  # every reference page is linked from README
        assert f"(docs/{page.name})" in text, page.name
    assert "(docs/troubleshooting.md)" in text


def test_the_intro_names_every_client():
    """What taosync is, in README's first paragraph: every registered client by name, the
    list generated from the registry (taosync/clients/readme.py), never written by hand."""
    from taosync.clients.registry import all as all_clients

    intro = README.read_text(encoding="utf-8").split("\n## ", 1)[0]
    missing = [m.TITLE for m in all_clients().values() if m.TITLE not in intro]
    assert not missing, missing
    assert "<!-- client-names -->" in intro and "<!-- mcp-apps -->" in intro


def _tables(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every table row outside code blocks."""
    out, fenced = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("|"):
            out.append((n, line))
    return out


def test_no_table_row_stands_outside_its_table():
    """A row after a blank line or text is a stray: Markdown shows it as a paragraph of
    pipes. Every table starts with a header row and its |---| line, and every row has
    the header's number of cells."""
    wrong = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").split("\n")
        rows = dict(_tables("\n".join(lines)))
        cells = 0
        for n, line in rows.items():
            count = len(re.split(r"(?<!\\)\|", line.strip())) - 2
            if n - 1 not in rows:  # a table's first row: its header
                if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[n].strip()):
                    wrong.append(f"{page.name}:{n}: a row outside a table: {line[:80]}")
                cells = count
            elif count != cells:
                wrong.append(f"{page.name}:{n}: {count} cells, the header has {cells}")
    assert not wrong, "\n".join(wrong)


def _slug(heading: str) -> str:
    """The anchor GitHub (and MkDocs' toc with its default slugify, near enough) gives."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", "\n".join(
        line for line in _prose_lines(text)), re.M)}


def _prose_lines(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def test_every_link_leads_somewhere():
    """Each relative link names a file of the checkout, and an anchor a heading there."""
    wrong = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(
                _prose_lines(page.read_text(encoding="utf-8")))):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if dest == TROUBLESHOOTING and not dest.exists():
                continue  # lane "errors" writes it; the merge brings it (README links it)
            if not dest.exists():
                wrong.append(f"{page.name}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                wrong.append(f"{page.name}: {target}: no such heading")
    assert not wrong, "\n".join(wrong)


def test_mkdocs_serves_every_page():
    """mkdocs.yml's nav lists every page under docs/ (and the troubleshooting page)."""
    config = YAML(typ="safe").load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["docs_dir"] == "docs"

    def leaves(nav):
        for item in nav:
            for value in (item.values() if isinstance(item, dict) else [item]):
                yield from (leaves(value) if isinstance(value, list) else [value])

    listed = set(leaves(config["nav"]))
    assert {page.name for page in PAGES[1:]} | {"troubleshooting.md"} <= listed
    assert all((DOCS / name).exists() or name == "troubleshooting.md" for name in listed)


# -- claims once false ---------------------------------------------------------------------

def test_no_page_installs_taosync_from_pypi():
    """taosync is not on PyPI: an install line names a clone or the git repository (the CI
    example once ran `pip install taosync`, which finds nothing, or another project)."""
    wrong = [f"{page.name}: {code!r}" for page in PAGES
             for code in _code(page.read_text(encoding="utf-8"))
             if re.search(r"(pip|pipx|uv tool) install (-U )?taosync\b(?![./@])", code)]
    assert not wrong, "\n".join(wrong)


def test_the_example_fleet_shown_is_the_shipped_one():
    """docs/fleet.md shows "the shipped fleet.yaml": byte for byte (it once lacked two of
    the clients the file has)."""
    page = (DOCS / "fleet.md").read_text(encoding="utf-8")
    assert "The shipped [`fleet.yaml`](../fleet.yaml) is the example" in page
    block = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    assert block == (ROOT / "fleet.yaml").read_text(encoding="utf-8")


def _sandbox(tmp_path: Path, base_url: str = "http://127.0.0.1:9/api") -> tuple[Path, Path, dict]:
    """A home, a work directory holding the suite's example fleet at ``base_url``, and
    the environment of a user there (the key set, no location variable)."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(parents=True)
    work.mkdir()
    yaml = YAML(typ="safe")
    data = yaml.load(EXAMPLE_FLEET.read_text())
    data["gateway"].update(base_url=base_url, gemini_base_url=base_url)
    with (work / "fleet.yaml").open("w") as fh:
        yaml.dump(data, fh)
    env = {k: v for k, v in os.environ.items()
           if k not in {*client_location_vars(), "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                        "XDG_CACHE_HOME", "TAOSYNC_CONFIG", "CODEX_API_KEY", "NO_COLOR",
                        "FORCE_COLOR", "PYTHONPATH"}}
    env.update(HOME=str(home), TAOTOKEN_API_KEY=TEST_KEY, PYTHONPATH=str(ROOT))
    return home, work, env


def _row(page: str, first_cell: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))


def test_watch_json_lines_carry_the_keys_the_docs_name(tmp_path):
    """docs/json.md's `watch` row names the keys of each JSON line: the field is `event`
    (it once said `kind`, which no line has)."""
    row = _row("json.md", "`watch`")
    named = [k for k in re.findall(r"`([a-z_]+)`", row.split("|")[2])]
    assert "event" in named and "kind" not in named, row
    home, work, env = _sandbox(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "taosync", "watch", "--json", "--no-verify"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = []
    try:
        for line in proc.stdout:  # until the first apply is reported
            lines.append(json.loads(line))
            if lines[-1].get("event") == "applied":
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=60)
    lines += [json.loads(line) for line in rest.splitlines() if line.strip()]
    assert proc.returncode == 0, err
    assert [line["event"] for line in lines][-1] == "stopped"
    for line in lines:
        assert set(named) <= set(line), (named, line)
        assert "kind" not in line, line


def test_the_no_mcp_note_is_where_the_docs_say(tmp_path):
    """docs/secrets.md: the clients without MCP are named once by an `info:` line of
    `plan` (without -v since #29's quiet output), and `-q` leaves it out."""
    page = (DOCS / "secrets.md").read_text(encoding="utf-8")
    assert "`plan` and `apply` say so once (an `info:` line" in page
    _home, work, env = _sandbox(tmp_path)
    runs = {flags: subprocess.run([sys.executable, "-m", "taosync", "plan", *flags], cwd=work,
                                  env=env, capture_output=True, text=True, timeout=120)
            for flags in ((), ("-q",))}
    note = re.compile(r"^info: .*have no MCP", re.M)
    plain, quiet = runs[()], runs[("-q",)]
    assert plain.returncode == 0 and len(note.findall(plain.stdout + plain.stderr)) == 1
    assert quiet.returncode == 0 and not note.search(quiet.stdout + quiet.stderr)


def test_apply_no_key_says_it_needs_dry_run(tmp_path):
    """`--no-key` is for a dry run only: apply's help says so where it names the option,
    the docs say so, and apply without `--dry-run` refuses (exit 2) naming it."""
    helptext = " ".join(subprocess.run([sys.executable, "-m", "taosync", "apply", "--help"],
                                       capture_output=True, text=True, cwd=ROOT,
                                       timeout=60).stdout.split())
    option = helptext[helptext.index("--no-key "):].split(" -h, --help")[0]
    assert "--dry-run" in option, option
    assert "[--dry-run [--no-key]]" in _row("commands.md", "`taosync apply [--only CLIENT] "
                                                          "[--dry-run [--no-key]] [--no-verify] "
                                                          "[--stub] [--yes] [--force] [--release-moved] "
                                                          "[-m TEXT]`")
    _home, work, env = _sandbox(tmp_path)
    done = subprocess.run([sys.executable, "-m", "taosync", "apply", "--no-key"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--dry-run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


# -- every --help example runs ----------------------------------------------------------------

def examples(name: str) -> list[str]:
    """The example lines of ``taosync NAME --help`` (its "Examples:" and "Example:"
    sections), comments dropped."""
    lines, taking = [], False
    for line in (_command(name).epilog or "").split("\n"):
        if line.strip() in ("Examples:", "Example:"):
            taking = True
            continue
        if taking and line.startswith("  ") and "taosync" in line:
            lines.append(line.split("  #")[0].strip())
        elif taking and line.strip() not in ("", "\b"):
            taking = False
    return lines


#: an example that does not end 0 on a terminal, and why (each code is in its --help)
EXIT = {
    "taosync destroy": (1, "it asks (y/N) on the terminal; the test answers n"),
    # lane profiles: tests/test_profiles.py runs it in a fleet that declares profile work
    "taosync env --profile work > .envrc": (2, "the example fleet declares no profile work"),
}
#: an example that takes back an earlier step: that step first, as a user would
AFTER = {"taosync rollback --redo": "taosync rollback"}
#: examples that run until stopped: the output that says they are up
UNTIL_STOPPED = {"taosync stub --port 8787": "stand-in gateway on",
                 "taosync watch": "watching"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A home with three applies (so `rollback --to 3` has its apply) of the suite's
    example fleet, its gateway a stand-in on loopback that stays up for every example."""
    from taosync.stub import Stub

    with Stub(key=TEST_KEY) as stub:
        top = tmp_path_factory.mktemp("examples")
        root = top / "live"  # a state belongs to its home's path: each test gets this one
        home, work, env = _sandbox(root, stub.root)
        fleet = work / "fleet.yaml"
        original = fleet.read_text()
        for text in (original, original.replace("weak_model: fast", "weak_model: balanced"),
                     original):
            fleet.write_text(text)
            done = subprocess.run([sys.executable, "-m", "taosync", "apply"], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
        assert "weak_model: fast" in original
        shutil.copytree(root, top / "pristine", symlinks=True)
        yield root, top / "pristine", env


def _on_a_terminal(script: str, cwd: Path, env: dict, until: str | None) -> tuple[int, str]:
    """Run ``script`` in bash on a pseudo-terminal, as a user types it (answering "n"
    should it ask); a command that runs until stopped gets Ctrl-C once it says ``until``."""
    master, slave = os.openpty()
    proc = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdin=slave,
                            stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    os.write(master, b"n\n")
    out, deadline, stopped = b"", time.monotonic() + 300, False
    try:
        while True:
            if until and not stopped and until.encode() in out:
                os.killpg(proc.pid, signal.SIGINT)
                stopped = True
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal closed: every writer has exited
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
            assert time.monotonic() < deadline, out.decode(errors="replace")[-2000:]
        return proc.wait(timeout=60), out.decode(errors="replace")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.close(master)


def _aliases() -> tuple[str, ...]:
    from taosync.cli import ALIASES

    return ALIASES


#: commands whose examples need a world of their own, run as written by the test named
PROVEN_ELSEWHERE = {
    "edit": "tests/test_verbs_help_examples.py (editor scripts, a fleet in a git clone)",
    "update": "tests/test_verbs_help_examples.py (a fleet in a git clone with a remote)",
    "secret": "tests/test_stores.py (a file-backed keyring; the value on stdin)",
    # lane profiles: exec runs inside a profile, which the example fleet does not declare
    "exec": "tests/test_profiles.py (a fleet with profiles work and home, stand-in clients)",
    "use": "tests/test_gateways.py (a fleet with the gateways home and work)",
}


@pytest.mark.parametrize("name", [c for c in _commands()
                                  if c not in _aliases() and c not in PROVEN_ELSEWHERE])
def test_every_help_example_runs(name, prepared, tmp_path):
    """Each example in ``taosync NAME --help``, each in the prepared home as it was (an
    example is not a step of a script): run on a terminal by bash, ``taosync`` on PATH; it
    ends with its documented code."""
    copy, pristine, env = prepared
    found = examples(name)
    assert found, f"taosync {name} --help has no example"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "taosync"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m taosync \"$@\"\n")
    script.chmod(0o755)
    env = {**env, "HOME": str(copy / "home"), "PATH": f"{bin_dir}:{env['PATH']}",
           "TERM": "dumb"}
    codes = {code: meaning for code, meaning in _exit_codes(name).items()}
    for example in found:
        shutil.rmtree(copy)  # the home as prepared, at the path its state was made for
        shutil.copytree(pristine, copy, symlinks=True)
        if example in AFTER:
            rc, out = _on_a_terminal(AFTER[example], copy / "work", env, None)
            assert rc == 0, f"{AFTER[example]} (before {example}): exit {rc}\n{out[-3000:]}"
        rc, out = _on_a_terminal(example, copy / "work", env, UNTIL_STOPPED.get(example))
        want, why = EXIT.get(example, (0, "done"))
        if example in UNTIL_STOPPED and rc == 2 and "already in use" in out:
            want = 2  # documented: "the port is taken" (another program holds 8787)
        assert rc == want, f"{example} ({why}): exit {rc}\n{out[-3000:]}"
        assert rc in codes, (example, rc, codes)
        assert "Traceback" not in out, out


def test_the_readmes_everyday_commands_run(prepared, tmp_path):
    """README's "Everyday commands", each on a terminal in the prepared home as it was
    (`taosync init` where no fleet.yaml is yet, as a newcomer runs it): each ends 0."""
    home, pristine, env = prepared
    text = README.read_text(encoding="utf-8").split("## Everyday commands\n", 1)[1]
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert len(lines) >= 10 and all("taosync " in line for line in lines), lines
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "taosync").write_text(
        f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m taosync \"$@\"\n")
    (bin_dir / "taosync").chmod(0o755)
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}", "TERM": "dumb"}
    for line in lines:
        shutil.rmtree(home)
        shutil.copytree(pristine, home, symlinks=True)
        cwd = home / "work"
        if line == "taosync init":
            cwd = home / "new"
            cwd.mkdir()
        rc, out = _on_a_terminal(line, cwd, env, None)
        assert rc == 0, f"{line}: exit {rc}\n{out[-3000:]}"
        assert "Traceback" not in out, out


def _exit_codes(name: str) -> dict[int, str]:
    from taosync.cli import EXIT_CODES

    return EXIT_CODES[name]


# -- the JSON contract: each command's keys as docs/json.md names them ------------------------

#: a run of each command whose object holds every key its row names before the first ";"
#: (what follows is conditional: "with --write", "no TASK"); stub and watch print lines
#: while they run (watch: test_watch_json_lines_carry_the_keys_the_docs_name)
JSON_RUNS = {
    "validate": ["validate"], "schema": ["schema"], "plan": ["plan"],
    "apply": ["apply"],  # after the fleet changed, so it writes (apply_id, record_kind)
    "status": ["status", "--no-key"], "rollback": ["rollback"], "log": ["log"],
    "prune": ["prune", "--dry-run"], "destroy": ["destroy", "--yes"], "managed": ["managed"],
    "verify": ["verify"], "stats": ["stats"], "doctor": ["doctor"], "init": ["init", "new.yaml"],
    "import": ["import"], "route": ["route", "fast", "--explain"], "env": ["env"],
    "forget": ["forget", "cline"], "use": ["use", "default", "--no-verify"],
    "adopt": ["adopt", "--yes"],  # nothing to adopt: one object too
    "completion": ["completion", "bash"], "cat": ["cat", "~/.codex/config.toml"],
    "where": ["where"], "help": ["help", "apply"],
}


def _named_keys(row: str) -> list[str]:
    """The keys a json.md row names unconditionally: backticked names before its first
    ";", leaving out what parentheses qualify."""
    cell = row.split("|")[2]
    while re.search(r"\([^()]*\)", cell):
        cell = re.sub(r"\([^()]*\)", "", cell)
    return re.findall(r"`([a-z_]+)`", cell.split(";")[0])


def test_json_rows_cover_every_command():
    rows = re.findall(r"^\| `([a-z-]+)`", (DOCS / "json.md").read_text(encoding="utf-8"), re.M)
    assert set(JSON_RUNS) | {"stub", "watch"} <= set(rows) | {"plan"}
    assert set(_commands()) - set(_aliases()) <= set(rows) | {"plan"}


@pytest.mark.parametrize("name", sorted(JSON_RUNS))
def test_json_output_has_the_keys_the_docs_name(name, prepared):
    home, pristine, env = prepared
    shutil.rmtree(home)
    shutil.copytree(pristine, home, symlinks=True)
    work = home / "work"
    if name == "apply":
        fleet = work / "fleet.yaml"
        fleet.write_text(fleet.read_text().replace("weak_model: fast", "weak_model: balanced"))
    argv = [arg.replace("~", str(home / "home"), 1) if arg.startswith("~") else arg
            for arg in JSON_RUNS[name]]
    done = subprocess.run([sys.executable, "-m", "taosync", *argv, "--json"], cwd=work,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300)
    assert done.stdout.lstrip().startswith("{"), (argv, done.stdout[-2000:], done.stderr[-2000:])
    data = json.loads(done.stdout)
    row = next(line for line in (DOCS / "json.md").read_text(encoding="utf-8").splitlines()
               if line.startswith(f"| `{name}`"))
    named = _named_keys(row)
    assert name == "env" or named, row
    assert data["exit_code"] == done.returncode and data["ok"] == (done.returncode == 0)
    assert data["format_version"] == 1
    missing = [key for key in named if key not in data]
    assert not missing, f"{name}: {missing} not in {sorted(data)} ({row})"
