"""taosync: one fleet.yaml, every AI coding client pointed at one gateway."""

__version__ = "0.1.0"
