# -*- coding: utf-8 -*-
# MIT License (see the taosync repository)
"""Shared by taosync.fleet's modules: the fleet files a task names or carries, and one
way to run taosync on the managed node through its JSON contract (docs/json.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import tempfile
import time

#: the options every module of the collection takes
COMMON_ARGS = dict(
    config=dict(type="path"),
    content=dict(type="raw"),
    include=dict(type="list", elements="raw", default=[]),
    home=dict(type="path"),
    only=dict(type="list", elements="str", default=[]),
    executable=dict(type="path"),
    secret_env=dict(type="dict", default={}, no_log=True),
    lock_timeout=dict(type="int", default=300),
)

#: where the role taosync.fleet.install puts taosync, searched after PATH
BIN_DIRS = ["/opt/taosync/bin", "~/.local/bin", "/usr/local/bin"]


def _dump(value):
    """A fleet given as a dict, as YAML text (block style: taosync's located messages
    then name a line that means something); JSON, which is YAML, without PyYAML."""
    if isinstance(value, str):
        return value
    try:
        import yaml

        return yaml.safe_dump(value, default_flow_style=False, sort_keys=False,
                              allow_unicode=True)
    except ImportError:
        return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


class Taosync(object):
    """taosync on the managed node, with the task's fleet: ``config`` as it is, or
    ``content`` written as ``fleet.yaml`` in a private temporary directory (0700,
    removed at the end), each ``include`` entry — a path, or ``{name, content}`` written
    beside it — merged under it by taosync's own ``include:``."""

    def __init__(self, module, persist=True):
        self.module = module
        self.persist = persist and not module.check_mode
        p = module.params
        self.tmp = tempfile.mkdtemp(prefix="taosync-ansible-")  # taosync's working directory
        # where the fleet files the task carries go: first the temporary directory (so
        # a fleet that does not validate leaves nothing on the host), then settle()
        self.dir = self.tmp
        self.config = None
        try:
            self.exe = p["executable"] or module.get_bin_path(
                "taosync", opt_dirs=[os.path.expanduser(d) for d in BIN_DIRS])
            if not self.exe:
                self.fail("taosync is not installed on this host (not on PATH nor in %s): "
                          "run the role taosync.fleet.install first, or set executable"
                          % ", ".join(BIN_DIRS))
            self.home = os.path.abspath(os.path.expanduser(p["home"])) if p["home"] else None
            self.config = self._fleet(p)
        except BaseException:  # the temporary directory never outlives the task
            self.cleanup()
            raise

    def settle(self):
        """Before a write: move the carried fleet files to their lasting place (see
        _place), so the next run names the same files and is taosync's no-op."""
        if self.persist and self.dir == self.tmp and self.config \
                and self.config.startswith(self.tmp + os.sep):
            self.dir = self._place()
            self.config = self._fleet(self.module.params)

    # the fleet -------------------------------------------------------------------
    def _fleet(self, p):
        if p["config"] is not None and p["content"] is not None:
            self.fail("config and content are mutually exclusive: give one")
        main = None
        if p["config"] is not None:
            main = os.path.abspath(os.path.expanduser(p["config"]))
        elif p["content"] is not None:
            main = self._write("fleet.yaml", _dump(p["content"]))
        includes = []
        for i, entry in enumerate(p["include"] or []):
            if isinstance(entry, dict):
                name, content = entry.get("name"), entry.get("content")
                if not name or content is None or os.path.basename(name) != name \
                        or name in ("fleet.yaml", "task.yaml"):
                    self.fail("include[%d]: a path, or {name: FILE.yaml, content: ...} "
                              "with a plain file name other than fleet.yaml" % i)
                includes.append(self._write(name, _dump(content)))
            elif isinstance(entry, str):
                includes.append(os.path.abspath(os.path.expanduser(entry)))
            else:
                self.fail("include[%d]: a path, or {name: FILE.yaml, content: ...}" % i)
        if not includes:
            return main
        # taosync merges the includes in order, then the including file on top: a top
        # file that only includes gives base fleets first, the task's fleet last
        names = includes + ([main] if main else [])
        return self._write("task.yaml", json.dumps({"include": names}) + "\n")

    def _write(self, name, text):
        """Write one carried file (unless it already holds ``text``: taosync's render
        cache and no-op fast path key on the fleet's files and their paths)."""
        path = os.path.join(self.dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    return path
        except (OSError, ValueError):
            pass
        tmp = path + ".tmp"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        self._own(tmp)
        os.rename(tmp, path)
        return path

    def _place(self):
        """The directory for the fleet files a task carries: ``ansible/`` in taosync's
        state directory for the home, the same every run (so the second run is taosync's
        no-op, and destroy --purge takes it away with the state), private (0700, the
        home owner's). In check mode, where nothing may be written, and for a module that
        writes nothing (status), a temporary one."""
        _, where = self.run(self.args("where", fleet=False, only=[]))
        target = os.path.join(where["state"]["path"], "ansible")
        missing, d = [], target
        while not os.path.isdir(d):
            missing.append(d)
            d = os.path.dirname(d)
        for d in reversed(missing):
            os.mkdir(d, 0o700)
            self._own(d)
        made = os.path.join(target, "made-dirs.json")
        if missing and not os.path.exists(made):  # what state: absent, purge takes away
            fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(missing, f)
            self._own(made)
        return target

    def _own(self, path):
        """Root writing into another user's home: the file is the home owner's."""
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            st = os.stat(self.home or os.path.expanduser("~"))
            if st.st_uid != 0:
                os.lchown(path, st.st_uid, st.st_gid)

    # running taosync ---------------------------------------------------------------
    def args(self, command, *extra, **kw):
        """``taosync COMMAND --json`` with the task's home, fleet and ``only``."""
        out = [self.exe, command, "--json"]
        if self.home:
            out += ["--home", self.home]
        if self.config and kw.get("fleet", True):
            out += ["-c", self.config]
        for client in kw.get("only", self.module.params["only"]) or []:
            out += ["--only", client]
        return out + list(extra)

    def run(self, argv, ok=(0,)):
        """Run taosync and give its JSON object. Bad input (2), could not write (3) and
        internal errors fail the task with taosync's message and its located problems;
        a held lock is waited for up to ``lock_timeout`` seconds (taosync itself waits 60
        s, then exits 3: this goes on asking until the deadline)."""
        env = dict((str(k), str(v)) for k, v in (self.module.params["secret_env"] or {}).items())
        env.update(NO_COLOR="1", TERM="dumb")
        deadline = time.monotonic() + max(0, self.module.params["lock_timeout"])
        while True:
            rc, out, err = self.module.run_command(argv, cwd=self.tmp, environ_update=env)
            data = self._parse(argv, rc, out, err)
            if rc == 3 and _lock_busy(data) and time.monotonic() < deadline:
                time.sleep(1)
                continue
            break
        if rc not in ok:
            problems = [dict(p, file=self.named(p.get("file"))) for p in data.get("problems") or []]
            details = [self.named(d) for d in data.get("details") or []]
            msg = self.named(data.get("error")) or "taosync %s exited %d" % (argv[1], rc)
            self.fail("\n".join([msg] + details), rc=rc, problems=problems,
                      stderr=self.named(err.strip()))
        return rc, data

    def _parse(self, argv, rc, out, err):
        try:
            data = json.loads(out)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            return data
        except ValueError:
            self.fail("taosync %s gave no JSON (exit %d): %s"
                      % (argv[1], rc, (err or out).strip()[-2000:]), rc=rc)

    def named(self, text):
        """The files the task carried, named as the task named them (``fleet.yaml``,
        an include's ``name``), not by their temporary directory."""
        if not isinstance(text, str):
            return text
        for d in (self.dir, self.tmp):
            text = text.replace(d + os.sep, "") if d else text
        return text

    def fail(self, msg, **kw):
        self.cleanup()
        kw.setdefault("changed", False)
        self.module.fail_json(msg=msg, **kw)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def _lock_busy(data):
    """taosync's "another taosync (pid N, apply) holds …/lock (waited 60 s)" (exit 3)."""
    error = data.get("error") or ""
    return " holds " in error and "(waited " in error


def file_rows(data):
    """``files``: one row per file taosync plans, each with its own ``changed``."""
    return [dict(path=f["path"], display=f.get("display"), action=f["action"],
                 clients=f.get("clients", []), changed=f["action"] != "unchanged")
            for f in data.get("files", [])]


def diffs(data):
    """One before/after per changed file for ``--diff``, redacted by taosync."""
    out = []
    for f in data.get("files", []):
        if f["action"] == "unchanged":
            continue
        name = f.get("display") or f["path"]
        out.append(dict(before_header=name if f.get("before") is not None else "/dev/null",
                        after_header=name if f.get("after") is not None else "/dev/null",
                        before=f.get("before") or "", after=f.get("after") or ""))
    return out
