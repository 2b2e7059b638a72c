"""What taosync manages here, file by file (``taosync managed``): the keys the render
owns in each client's files and those the state owns, each marked present on disk and
owned in the state. Values are never part of it."""

from __future__ import annotations


def inventory(patches, state) -> dict[str, list[dict]]:
    """client → its files, each with its key paths (owned, volatile, skeleton) and
    whether each is present in the file on disk and owned in the state."""
    from taosync.formats.base import keypath_str

    clients: dict[str, list[dict]] = {}
    rendered = set()
    for patch in patches:
        rendered.add(str(patch.path))
        keys = ([(kp, "owned") for kp in patch.values] + [(kp, "volatile") for kp in patch.volatile]
                + [(kp, "skeleton (filled in when missing)") for kp in patch.skeleton])
        clients.setdefault(patch.client, []).append(
            _file(str(patch.path), patch.format, [(keypath_str(kp), role) for kp, role in keys],
                  state, rendered=True))
    for path_text, fs in sorted(state.files.items()):
        if path_text in rendered:
            continue
        keys = [(k, "volatile" if o.volatile else "owned") for k, o in fs.owned.items()]
        for client in fs.clients:
            clients.setdefault(client, []).append(
                _file(path_text, fs.format, keys, state, rendered=False))
    return clients


def _file(path_text: str, fmt: str, keys, state, *, rendered: bool) -> dict:
    """One file's entry: present on disk, owned in the state, and each key's marks."""
    from pathlib import Path

    from taosync.engine.plan import read_target
    from taosync.errors import BadInput
    from taosync.formats.base import MISSING, keypath_parse
    from taosync.formats.registry import editor_for

    owned = state.files.get(path_text)
    doc, editor, error = None, None, None
    try:
        text = read_target(Path(path_text))[1]
        if text is not None:
            editor = editor_for(fmt)
            doc = editor.parse(text)
    except BadInput as exc:
        text, error = None, exc.message
    except Exception as exc:  # a file that does not parse: its keys cannot be looked up
        error = f"does not parse ({type(exc).__name__})"
    entries = []
    for key, role in keys:
        present = (doc is not None and editor is not None
                   and editor.get(doc, keypath_parse(key)) is not MISSING)
        entries.append({"key": key, "role": role, "present": present,
                        "owned": owned is not None and key in owned.owned})
    return {"path": path_text, "format": fmt, "rendered": rendered,
            "present": _present(path_text), "owned": owned is not None,
            "keys": entries, **({"error": error} if error else {})}


def _present(path_text: str) -> bool:
    from pathlib import Path

    from taosync.privilege import owner_rights

    with owner_rights():  # root on a user's home: looked at as its owner
        return Path(path_text).exists()
