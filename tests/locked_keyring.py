"""A keyring backend that is locked, as Secret Service is for a locked collection with no
one to unlock it: every read raises the library's own KeyringLocked (its message holds a
token-looking value, which taosync must not show). Chosen by PYTHON_KEYRING_BACKEND in
tests/test_stores.py."""

from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked


class LockedKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def get_password(self, service, username):
        raise KeyringLocked("Failed to unlock the collection sk-locked-0123456789abcdefgh")

    def set_password(self, service, username, password):
        raise KeyringLocked("Failed to unlock the collection")

    def delete_password(self, service, username):
        raise KeyringLocked("Failed to unlock the collection")
