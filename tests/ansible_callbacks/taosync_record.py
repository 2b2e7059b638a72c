"""A test-only Ansible callback (tests/test_ansible.py): every task result of every host,
one JSON line each, into the file $TAOSYNC_ANSIBLE_RECORD — what the default callback
prints, as data the assertions can read."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "taosync_record"
    CALLBACK_NEEDS_ENABLED = True

    def _record(self, result, status):
        line = {"host": result._host.get_name(), "task": result._task.get_name(),
                "action": result._task.action, "status": status, "result": result._result}
        with open(os.environ["TAOSYNC_ANSIBLE_RECORD"], "a", encoding="utf-8") as f:
            f.write(json.dumps(line, default=str) + "\n")

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")
