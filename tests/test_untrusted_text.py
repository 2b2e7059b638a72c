"""Text from the network never drives the terminal (issue #23, "OSC/BEL escapes from a
gateway reach the terminal"): a gateway answering with OSC 52 (which writes the
clipboard), BEL, CSI, C1 controls, bidi overrides and newlines in its error bodies,
model lists and answers has them shown inertly (␛, ␇, U+FFFD, a space) in every output
of ``verify`` — text, ``-v``, ``--json`` — and a client file's own control bytes do not
reach the terminal through a diff either."""

from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

#: everything a terminal would obey: C0 but newline/tab, DEL, C1, bidi and line separators
OBEYED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                    r"\u202a-\u202e\u2066-\u2069]")
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
HOSTILE = f"bad{OSC52} \x1b[2J\x1b[8mhidden\x07 \u202egnirts\u202c \x9b31m\n✓ forged line"


class Hostile(http.server.BaseHTTPRequestHandler):
    """A gateway whose every text is hostile: gw-err is unknown (404, a hostile message,
    a hostile model list), gw-odd answers 200 naming a hostile model with a hostile answer,
    gw-500 fails with a raw hostile text body."""

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        ids = [f"gw-err{OSC52}", "gw\u202eerr", "gw-odd"]
        self._send(200, json.dumps({"data": [{"id": i} for i in ids]}).encode())

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        model = body.get("model")
        if model == "gw-err":
            self._send(404, json.dumps({"error": {"message": HOSTILE,
                                                  "code": "model_not_found"}}).encode())
        elif model == "gw-500":
            self._send(500, HOSTILE.encode(), "text/plain")
        else:
            self._send(200, json.dumps({
                "id": "x", "object": "chat.completion", "model": f"gw-odd{OSC52}",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": HOSTILE}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode())

    def log_message(self, *a):
        pass


@pytest.fixture
def hostile_root():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _fleet(path: Path, root: str) -> Path:
    path.write_text(f"""version: 1
gateway:
  base_url: {root}
  key: ${{env:TAOTOKEN_API_KEY}}
models:
  gw-err: {{}}
  gw-odd: {{}}
  gw-500: {{}}
routes:
  main: gw-err
  weak: gw-odd
  editor: gw-500
clients:
  aider: {{model: main, weak_model: weak, editor_model: editor}}
verify: {{retries: 0, timeout: 5}}
""")
    return path


def _inert(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in OBEYED.findall(text)})
    assert not found, f"output holds characters a terminal obeys: {found}"
    assert not any(line.lstrip().startswith("✓ forged") for line in text.splitlines())


@pytest.mark.parametrize("args", [(), ("-v",), ("--json",)], ids=["text", "verbose", "json"])
def test_verify_prints_a_hostile_gateway_inertly(taosync, tmp_path, hostile_root, args):
    fleet = _fleet(tmp_path / "hostile.yaml", hostile_root)
    r = taosync("verify", "--desired", *args, config=fleet)
    assert r.rc == 1, r.both
    _inert(r.both)
    shown = r.out if "--json" not in args else json.dumps(json.loads(r.out),
                                                          ensure_ascii=False)
    # the gateway's words are still there to read, their controls as pictures
    assert "bad␛]52;c;ZXZpbA==␇" in shown
    assert "gw-odd␛]52;c;ZXZpbA==␇" in shown  # the model a 200 answer named
    if "--json" in args:
        data = json.loads(r.out)
        assert all(not OBEYED.search(json.dumps(p, ensure_ascii=False))
                   for p in data["results"])


def test_verify_subprocess_output_is_inert(home, tmp_path, hostile_root):
    """The real process (a terminal would read exactly these bytes)."""
    fleet = _fleet(tmp_path / "hostile.yaml", hostile_root)
    for extra in ((), ("-v",), ("--json",)):
        proc = subprocess.run([sys.executable, "-m", "taosync", "--home", str(home), "-c",
                               str(fleet), "verify", "--desired", *extra],
                              capture_output=True, timeout=120,
                              cwd=Path(__file__).resolve().parent.parent)
        assert proc.returncode == 1, proc.stderr
        out = proc.stdout.decode("utf-8") + proc.stderr.decode("utf-8")
        _inert(out)
        assert b"\x1b]52" not in proc.stdout + proc.stderr


def test_json_output_escapes_c1_and_bidi_instead_of_writing_them(taosync, tmp_path,
                                                                  hostile_root):
    """--json keeps the exact value (JSON's \\uXXXX), so no raw C1/bidi reaches a terminal
    that shows it; ESC/BEL were already turned into pictures where the text came in."""
    fleet = _fleet(tmp_path / "hostile.yaml", hostile_root)
    r = taosync("verify", "--desired", "--json", config=fleet)
    assert not OBEYED.search(r.out)
    json.loads(r.out)  # still valid JSON


def test_a_client_files_own_escape_bytes_do_not_reach_the_terminal_through_a_diff(
        taosync, home):
    """A user's ~/.env-style client file holding an OSC 52 and a bidi override: plan
    shows the diff with them as pictures (text), and as JSON escapes (--json)."""
    target = home / ".config" / "io.datasette.llm" / "default_model.txt"
    target.parent.mkdir(parents=True)
    target.write_text(f"old-model{OSC52}\u202e\n")
    for args in ((), ("--json",), ("-v",)):
        r = taosync("plan", *args)
        _inert(r.both)
    r = taosync("plan")
    assert "old-model␛]52;c;ZXZpbA==␇" in r.out


def test_untrusted_keeps_words_and_drops_what_a_terminal_obeys():
    from taosync.ui import terminal_safe, untrusted

    assert untrusted("gpt-4o ok") == "gpt-4o ok"
    assert untrusted(f"a{OSC52}b") == "a␛]52;c;ZXZpbA==␇b"
    assert untrusted("one\r\ntwo\tthree\x85four") == "one  two three four"
    assert untrusted("x\u202ey\u2066z\x9b") == "x\ufffdy\ufffdz\ufffd"
    # the last net keeps lines, CRLF ends and exactly taosync's own colours; not a lone CR
    assert terminal_safe("a\r\nb\rc\t\x07\n") == "a\r\nb␍c\t␇\n"
    assert terminal_safe("\x1b[32mok\x1b[0m \x1b[8mx") == "\x1b[32mok\x1b[0m ␛[8mx"


def test_route_explain_prints_a_history_line_inertly(taosync, home, fleet_file):
    """history.jsonl is data: a line whose code holds an OSC 52 (a forged or damaged
    history) is shown as pictures by `route --explain`."""
    import time

    from conftest import TEST_KEY
    from test_routing_failover import MODELS, PREFERRED, choosing_fleet
    from test_routing_future_probes import _line

    from taosync.stub import Stub

    with Stub(key=TEST_KEY, models=MODELS) as stub:
        choosing_fleet(fleet_file, stub.root)
        assert taosync("apply").rc == 0
    line = {**_line(PREFERRED, False, time.time()), "status": None, "code": f"x{OSC52}"}
    with next(home.rglob("history.jsonl")).open("a") as f:
        f.write(json.dumps(line) + "\n")
    r = taosync("route", "balanced", "--explain")
    assert r.rc == 0, r.both
    _inert(r.both)
    assert "x␛]52;c;ZXZpbA==␇" in r.out


def test_import_proposes_bidi_and_controls_escaped():
    """A client file's model id holding a bidi override or ESC is proposed as a YAML
    escape (the same value, inert on the terminal; validate then refuses it, located)."""
    from taosync.importer.yaml_out import scalar

    assert scalar("gpt\u202e-4o") == '"gpt\\u202e-4o"'
    assert scalar(f"gpt{OSC52}") == '"gpt\\u001b]52;c;ZXZpbA==\\u0007"'
    assert scalar("gpt\u2066x\u200f") == '"gpt\\u2066x\\u200f"'
    assert scalar("modèle – ok") == '"modèle – ok"'
