"""Wire protocols, one module each: request shape, answer reader, stand-in answer, error body.

:mod:`taosync.protocols.registry` maps a protocol name to its module. Below ``verify/``,
``clients/`` and ``stub/``; imports nothing of taosync but itself. Standard library only.
"""
