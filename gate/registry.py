"""One generic registry for every extension point (tasks, metrics, rubrics, checks).

Entries are registered by name, either as objects or as lazy ``"module:attr"`` strings so that
registering a task does not import its heavy dependencies until it is used.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name was looked up that no entry of the registry carries."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        self.message = (
            f"unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(known)) or 'none'}."
        )
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class Registry(Generic[T]):
    """Maps names to objects of one kind, with lazy entries and helpful misses."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, obj: T | str | None = None) -> Callable[[T], T] | None:
        """Register ``obj`` (or a ``"module:attr"`` path) under ``name``; usable as a decorator."""
        if obj is not None:
            self._add(name, obj)
            return None

        def decorator(target: T) -> T:
            self._add(name, target)
            return target

        return decorator

    def _add(self, name: str, obj: T | str) -> None:
        if name in self._entries and self._entries[name] is not obj:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = obj

    def get(self, name: str) -> T:
        """Return the entry for ``name``, importing it first when it is lazy."""
        if name not in self._entries:
            raise UnknownNameError(self.kind, name, list(self._entries))
        entry = self._entries[name]
        if isinstance(entry, str):
            module_name, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module_name), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
