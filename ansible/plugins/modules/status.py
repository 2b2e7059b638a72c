#!/usr/bin/python
# -*- coding: utf-8 -*-
# MIT License (see the taosync repository)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: status
short_description: A host's taosync health as facts (in sync, drift, pending; last verify)
version_added: "0.1.0"
description:
  - Runs C(taosync status --json), C(plan --json) and C(stats --json --by route) on the
    managed node; writes nothing, sends no request, never reports C(changed).
  - Sets the fact C(taosync_status) (also returned). Per file C(in_sync), C(drift) (an
    owned key edited by hand) or C(pending) (the fleet would change it); per route the
    last verify probe.
options:
  config:
    description: Path of a fleet.yaml on the managed node. Mutually exclusive with I(content).
    type: path
  content:
    description: The fleet as YAML text or a dict (see M(taosync.fleet.apply)).
    type: raw
  include:
    description: Base fleets merged under the fleet (see M(taosync.fleet.apply)).
    type: list
    elements: raw
    default: []
  home:
    description: The home (C(taosync --home)); default the user's HOME.
    type: path
  only:
    description: Only these client ids.
    type: list
    elements: str
    default: []
  executable:
    description: Path of the taosync program (see M(taosync.fleet.apply)).
    type: path
  secret_env:
    description: Environment variables for taosync only; never logged.
    type: dict
    default: {}
  lock_timeout:
    description: Seconds to wait for another taosync's lock.
    type: int
    default: 300
author:
  - taosync contributors
"""

EXAMPLES = r"""
- name: How is each laptop doing?
  taosync.fleet.status:
    include: [{name: team.yaml, content: "{{ taosync_team_fleet }}"}]
    content: "{{ taosync_host_fleet | default({}) }}"
- ansible.builtin.debug:
    msg: "{{ taosync_status.summary }}"
"""

RETURN = r"""
taosync_status:
  description:
    - C(in_sync) (bool), C(applied), C(last_apply), C(summary) (counts per state),
      C(files) (C(path), C(display), C(clients), C(state), C(drift) keys, C(pending) keys),
      C(routes) (per route C(last), C(last_ok), C(last_code), C(runs), C(failures)),
      C(drift), C(pending).
  type: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.taosync.fleet.plugins.module_utils.taosync import (
    COMMON_ARGS, Taosync)


def main():
    module = AnsibleModule(argument_spec=dict(COMMON_ARGS), supports_check_mode=True,
                           mutually_exclusive=[("config", "content")])
    t = Taosync(module, persist=False)
    try:
        _, status = t.run(t.args("status"), ok=(0, 1))
        _, plan = t.run(t.args("plan"))
        _, stats = t.run(t.args("stats", "--by", "route", "--include-stub", fleet=False,
                                only=[]))
    finally:
        t.cleanup()
    drift, pending = status.get("drift") or [], status.get("pending") or []
    files = []
    for f in plan.get("files", []):
        keys = [d["key"] for d in drift if d["path"] == f["path"]]
        waiting = [k for q in pending if q["path"] == f["path"] for k in q.get("keys", [])]
        state = "drift" if keys else "pending" if (waiting or f["action"] != "unchanged") \
            else "in_sync"
        files.append(dict(path=f["path"], display=f.get("display"), clients=f["clients"],
                          state=state, drift=keys, pending=waiting or
                          ([] if f["action"] == "unchanged" else [f["action"]])))
    routes = dict((r.get("route") or r.get("name") or "?", r) for r in stats.get("routes") or [])
    summary = dict((s, sum(1 for f in files if f["state"] == s))
                   for s in ("in_sync", "drift", "pending"))
    facts = dict(in_sync=not drift and not pending and summary["pending"] == 0,
                 applied=status.get("applied"), last_apply=status.get("last_apply"),
                 summary=summary, files=files, routes=routes, drift=drift, pending=pending)
    module.exit_json(changed=False, taosync_status=facts,
                     ansible_facts=dict(taosync_status=facts))


if __name__ == "__main__":
    main()
