#!/usr/bin/python
# -*- coding: utf-8 -*-
# MIT License (see the taosync repository)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: apply
short_description: Render a taosync fleet into every AI coding client's files on a host
version_added: "0.1.0"
description:
  - Runs C(taosync) on the managed node through its JSON contract (C(status --json),
    C(plan --json), C(apply --json), C(destroy --json)); only the keys taosync owns change
    in each client file; the user's own keys, comments and formatting stay.
  - Idempotent (a second run reports C(changed=false)). Check mode is C(taosync plan);
    nothing is written (not even taosync's state or lock) and no request is sent.
    Diff mode gives one before/after per file with every secret redacted on both sides.
  - Never prompts. Hand edits of owned keys are handled per I(on_drift).
  - Under C(become_user) taosync runs as that user, in that user's HOME; run as root with
    I(home) set to another user's home, taosync writes with that user's rights (the files
    stay the user's).
options:
  config:
    description: Path of a fleet.yaml on the managed node. Mutually exclusive with I(content).
    type: path
  content:
    description:
      - The fleet itself, as YAML text or a dict, written as C(fleet.yaml) into a private
        temporary directory on the managed node (removed afterwards). taosync's located
        messages name it C(fleet.yaml).
    type: raw
  include:
    description:
      - Base fleets merged under the fleet (taosync's C(include:); in order, the fleet on
        top). Each is a path on the managed node, or C({name, content}) written beside
        I(content) as C(name).
    type: list
    elements: raw
    default: []
  home:
    description: The home to render into (C(taosync --home)); default the user's HOME.
    type: path
  only:
    description: Only these client ids (C(--only), repeatable).
    type: list
    elements: str
    default: []
  state:
    description: C(present) applies the fleet; C(absent) gives every owned key back
      (C(taosync destroy)).
    type: str
    choices: [present, absent]
    default: present
  on_drift:
    description:
      - What to do with owned keys edited by hand since the last apply.
      - C(overwrite) writes the fleet's values over them (C(apply --yes)); C(keep) leaves
        every file holding one as it is (and the rest of its client's files), reporting
        them under C(kept); C(fail) fails the task and writes nothing.
    type: str
    choices: [overwrite, keep, fail]
    default: fail
  verify:
    description: After writing, probe each backend whose files changed with one real
      request (taosync's verify); a failed probe fails the task. Never in check mode.
    type: bool
    default: true
  purge:
    description: With C(state=absent), also remove taosync's state (history, backups).
    type: bool
    default: false
  executable:
    description: Path of the taosync program; default C(taosync) on PATH, then the
      role's venv C(/opt/taosync/bin), C(~/.local/bin).
    type: path
  secret_env:
    description: Environment variables for taosync only (the key a C(${env:...})
      reference reads); never logged.
    type: dict
    default: {}
  lock_timeout:
    description: Seconds to wait for another taosync on the same home (its lock).
    type: int
    default: 300
author:
  - taosync contributors
"""

EXAMPLES = r"""
- name: The team fleet, this host's overrides on top
  taosync.fleet.apply:
    include:
      - name: team.yaml
        content: "{{ taosync_team_fleet }}"
    content: "{{ taosync_host_fleet | default({}) }}"
    on_drift: keep

- name: Give every file back
  taosync.fleet.apply:
    state: absent
"""

RETURN = r"""
files:
  description: One entry per file taosync plans, each with its own C(changed).
  type: list
  elements: dict
  returned: always
drift:
  description: Owned keys edited by hand (C(path), C(display), C(key), C(kind), redacted C(old)/C(new)).
  type: list
  elements: dict
  returned: state=present
kept:
  description: Files left as they are under C(on_drift=keep).
  type: list
  elements: str
  returned: state=present
apply_id:
  description: taosync's record of the apply (C(taosync log), C(taosync rollback)).
  type: int
  returned: when something was written
verify:
  description: taosync's verify report, when it ran.
  type: dict
  returned: when verify ran
problems:
  description: taosync's located problems (C(file), C(line), C(column), C(path), C(message)) on failure.
  type: list
  returned: failed
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.taosync.fleet.plugins.module_utils.taosync import (
    COMMON_ARGS, Taosync, diffs, file_rows)


def present(t, module):
    p = module.params
    if p["config"] is None and p["content"] is None and not p["include"]:
        t.fail("state=present needs the fleet: config, content or include")
    _, status = t.run(t.args("status"), ok=(0, 1))
    drift = status.get("drift") or []
    only, kept = p["only"], []
    if drift and p["on_drift"] == "fail":
        t.fail("%d owned key(s) edited by hand since the last apply, on_drift=fail: %s"
               % (len(drift), "; ".join("%s %s" % (d["display"], d["key"]) for d in drift)),
               drift=drift)
    if drift and p["on_drift"] == "keep":
        _, plan = t.run(t.args("plan"))
        edited = set(d["path"] for d in drift)
        skip = set(c for f in plan["files"] if f["path"] in edited for c in f["clients"])
        kept = sorted(f["display"] for f in plan["files"] if set(f["clients"]) & skip)
        only = sorted(set(c for f in plan["files"] for c in f["clients"]) - skip)
        if not only:
            return dict(changed=False, files=[], drift=drift, kept=kept,
                        msg="every file has a hand edit; kept as it is (on_drift=keep)")
    if module.check_mode:
        _, data = t.run(t.args("plan", only=only))
    else:
        extra = ["--yes"] + ([] if p["verify"] else ["--no-verify"])
        t.settle()
        rc, data = t.run(t.args("apply", *extra, only=only), ok=(0, 1))
        if rc == 1:  # written, then verify failed (taosync rollback undoes it)
            t.fail(_verify_failed(t, data), changed=bool(data.get("changed")),
                   files=file_rows(data), verify=data.get("verify"),
                   apply_id=data.get("apply_id"))
    result = dict(changed=bool(data.get("changed")), files=file_rows(data), drift=drift,
                  kept=kept)
    for key in ("apply_id", "replaced", "verify"):
        if data.get(key) is not None:
            result[key] = data[key]
    n = sum(1 for f in result["files"] if f["changed"])
    result["msg"] = ("%s %d file(s)" % ("would change" if module.check_mode else "changed", n)
                     if n else "no changes: %d file(s) match the fleet" % len(result["files"]))
    return _with_diff(result, data, module)


def absent(t, module):
    p = module.params
    purge = ["--purge"] if p["purge"] else []
    _, where = t.run(t.args("where", fleet=False, only=[]))
    had_state = bool((where.get("state") or {}).get("exists"))
    made = _made_dirs(where)
    if module.check_mode:
        _, data = t.run(t.args("destroy", "--dry-run", *purge, only=[]))
    else:
        _, data = t.run(t.args("destroy", "--yes", *purge, only=[]))
        if purge:  # the directories this collection made for the state, once empty
            for d in sorted(made, key=len, reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass
    result = dict(changed=bool(data.get("changed")) or bool(purge and had_state),
                  files=file_rows(data), skipped=data.get("skipped") or {})
    if data.get("destroy_id") is not None:
        result["destroy_id"] = data["destroy_id"]
    n = sum(1 for f in result["files"] if f["changed"])
    result["msg"] = "%s %d file(s) back" % ("would give" if module.check_mode else "gave", n)
    return _with_diff(result, data, module)


def _verify_failed(t, data):
    """What the terminal's last line says: what was written, why each probe failed (the
    diagnosis, redacted by taosync), and how to undo it."""
    if data.get("error"):
        return t.named(data["error"])
    causes = []
    for r in (data.get("verify") or {}).get("results") or []:
        if not r.get("ok") and not r.get("standby"):
            cause = (r.get("diagnosis") or {}).get("cause") or "HTTP %s" % r.get("status")
            line = "%s (%s): %s" % (", ".join(r.get("clients") or []), r.get("model"), cause)
            if line not in causes:
                causes.append(line)
    return ("verify failed: apply #%s wrote %s file(s); to undo it: taosync rollback\n%s"
            % (data.get("apply_id"), data.get("changed"), "\n".join(causes)))


def _made_dirs(where):
    try:
        path = os.path.join(where["state"]["path"], "ansible", "made-dirs.json")
        with open(path) as f:
            return [d for d in json.load(f) if isinstance(d, str)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _with_diff(result, data, module):
    if module._diff:
        result["diff"] = diffs(data)
    return result


def main():
    args = dict(COMMON_ARGS,
                state=dict(type="str", default="present", choices=["present", "absent"]),
                on_drift=dict(type="str", default="fail",
                              choices=["overwrite", "keep", "fail"]),
                verify=dict(type="bool", default=True),
                purge=dict(type="bool", default=False))
    module = AnsibleModule(argument_spec=args, supports_check_mode=True,
                           mutually_exclusive=[("config", "content")])
    t = Taosync(module)
    try:
        result = absent(t, module) if module.params["state"] == "absent" else present(t, module)
    finally:
        t.cleanup()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
