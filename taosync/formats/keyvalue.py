"""``KEY=VALUE`` lines read literally (shell-gpt's ``.sgptrc``): the dotenv editor's
``literal`` dialect (see :mod:`taosync.formats.dotenv`)."""

from taosync.formats.dotenv import LITERAL_EDITOR as EDITOR

__all__ = ["EDITOR"]
