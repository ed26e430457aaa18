"""Checked configuration fields: each field of a config dataclass declares its range or choices
beside its default, and one function checks them all, with the field's type from its annotation.

    @dataclass(frozen=True, kw_only=True)
    class SearchConfig:
        num_simulations: int = checked(175, ge=1)
        fpu: str = checked("parent", choices=("parent", "value"))

        def __post_init__(self) -> None:
            check_fields(self)

A bad value raises :class:`FieldError`, which names the field and says what it must be
(``num_simulations: must be an integer >= 1, got 0``); whoever composes configs puts the
section's dotted path in front (``hopzero.config``). Every config room (ccengine, learner,
actors, evaluator, hopzero) uses this one mechanism; this is the lowest room that needs it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = [
    "Check",
    "FieldError",
    "build_config",
    "check_fields",
    "checked",
    "describe_type",
    "field_check",
    "leaf_fields",
]


class FieldError(ValueError):
    """A config field holds a value of the wrong type, out of range, or not among its choices."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        """The field's name, or a dotted path below it (``gate.games``)."""
        self.problem = problem
        """What is wrong, without the field's name (``must be an integer >= 1, got 0``)."""


@dataclass(frozen=True)
class Check:
    """What a field's value must be beyond its type: bounds, choices, or a named test."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | None = None
    test: Callable[[Any], bool] | None = None
    """A predicate for what bounds and choices cannot say (e.g. a URL's scheme)."""
    means: str = ""
    """What the value must be, in words, when ``test`` says more than the type and bounds
    (``empty or a redis://, rediss:// or unix:// URL``)."""
    bad: tuple[Any, ...] = ()
    """Values of the right type that ``test`` refuses (tests feed them in)."""

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` (already of the field's type) lies in range and among the choices."""
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if self.choices is not None and item not in self.choices:
                return False
            if isinstance(item, (int, float)) and not isinstance(item, bool) and not self._in_bounds(item):
                return False
        return self.test is None or bool(self.test(value))

    def _in_bounds(self, x: float) -> bool:
        return not (
            (self.ge is not None and x < self.ge) or (self.gt is not None and x <= self.gt)
            or (self.le is not None and x > self.le) or (self.lt is not None and x >= self.lt)
        )

    def describe(self, tp: Any) -> str:
        """What a value of type ``tp`` must be, in words: ``an integer >= 1``, ``a number in
        [0, 1)``, ``one of 'z', 'zq'``."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return self.means or describe_type(tp) + self._bounds()

    def _bounds(self) -> str:
        low = f"[{_num(self.ge)}" if self.ge is not None else f"({_num(self.gt)}" if self.gt is not None else None
        high = f"{_num(self.le)}]" if self.le is not None else f"{_num(self.lt)})" if self.lt is not None else None
        if low and high:
            return f" in {low}, {high}"
        if low:
            return f" {'>=' if self.ge is not None else '>'} {low[1:]}"
        if high:
            return f" {'<=' if self.le is not None else '<'} {high[:-1]}"
        return ""

    def out_of_range(self, integer: bool) -> list[Any]:
        """Values of the right type this check refuses: one past each bound, a foreign choice,
        the declared ``bad`` ones (the exhaustive test of the config tree feeds them in)."""
        step = 1 if integer else 0.5
        values: list[Any] = list(self.bad)
        if self.ge is not None:
            values.append(self.ge - step)
        if self.gt is not None:
            values.append(self.gt)
        if self.le is not None:
            values.append(self.le + step)
        if self.lt is not None:
            values.append(self.lt)
        if self.choices is not None:
            values.append("no-such-choice")
        return [int(v) if integer and isinstance(v, float) else v for v in values]


def _num(x: float | None) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def checked(
    default: Any = dataclasses.MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Sequence[Any] | None = None,
    test: Callable[[Any], bool] | None = None,
    means: str = "",
    bad: Sequence[Any] = (),
) -> Any:
    """A dataclass field with its default and its :class:`Check`; its type is its annotation.

    Bounds and choices apply to each item of a tuple field. A field declared with ``checked()``
    and nothing else is checked for its type only: that it is declared says nobody forgot it.
    """
    check = Check(ge, gt, le, lt, tuple(choices) if choices is not None else None, test, means, tuple(bad))
    metadata = {"check": check}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def field_check(field: dataclasses.Field[Any]) -> Check | None:
    """The :class:`Check` a field declared with :func:`checked` (None for a nested config)."""
    return field.metadata.get("check")


def leaf_fields(cls: type) -> list[tuple[dataclasses.Field[Any], Any]]:
    """Each field of config class ``cls`` that is not itself a config, with its resolved type."""
    return [(f, tp) for f, tp in _typed_fields(cls) if not _is_config(tp)]


@functools.cache
def _typed_fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any], ...]:
    """The fields of ``cls`` with their annotations resolved, once per class (resolving them
    takes a large part of a millisecond; rules and search configs are built often)."""
    hints = typing.get_type_hints(cls)
    return tuple((f, hints[f.name]) for f in dataclasses.fields(cls))


def _is_config(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def check_fields(obj: Any) -> None:
    """Check every field of the config dataclass ``obj`` against its type and its :class:`Check`;
    raise :class:`FieldError` naming the first bad one. Normalises in place what YAML and JSON
    deliver in another form: an integer given for a float field becomes a float, a list for a
    tuple field a tuple (so the config's hash does not depend on how a value was written)."""
    for f, tp in _typed_fields(type(obj)):
        value = getattr(obj, f.name)
        if _is_config(tp):
            if not isinstance(value, tp):
                raise FieldError(f.name, f"must be a {tp.__name__} section, got {value!r}")
            continue
        check = field_check(f) or Check()  # undeclared: its type only (the tests insist on one)
        given, value = value, _normalise(tp, value)
        if not _is_type(tp, value) or not check.accepts(value):
            raise FieldError(f.name, f"must be {check.describe(tp)}, got {given!r}")
        object.__setattr__(obj, f.name, value)


def _normalise(tp: Any, value: Any) -> Any:
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typing.get_origin(tp) is tuple and isinstance(value, list):
        return tuple(value)
    return value


def _is_type(tp: Any, value: Any) -> bool:
    """Whether ``value`` is of type ``tp`` (the annotations config fields use)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, float) and math.isfinite(value)
    if origin in (typing.Union, types.UnionType):
        return any(_is_type(a, value) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_is_type(args[0], v) for v in value)
        return len(value) == len(args) and all(_is_type(a, v) for a, v in zip(args, value))
    if tp is Fraction:
        return isinstance(value, Fraction)
    return isinstance(value, tp)


def describe_type(tp: Any) -> str:
    """A type in words: ``an integer``, ``a number``, ``a list of 3 integers``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string", Fraction: "a fraction"}
    if tp in words:
        return words[tp]
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is dict:
        return "a mapping"
    if origin is tuple:
        item = describe_type(args[0]).removeprefix("an ").removeprefix("a ")
        count = "" if len(args) == 2 and args[1] is Ellipsis else f"{len(args)} "
        return f"a list of {count}{item}s"
    return getattr(tp, "__name__", str(tp))


def build_config(cls: type, data: Any, *, base: Any = None) -> Any:
    """Instantiate config dataclass ``cls`` from plain ``data`` (a mapping), strictly: an unknown
    key is a :class:`FieldError` that names the valid ones, a nested section is built the same
    way (its errors carry the dotted path: ``gate.games``), every value is checked by the class.
    Keys ``data`` leaves out take their defaults, or ``base``'s values when a config object is
    given (``--set``-style overrides on top of a loaded config)."""
    if not isinstance(data, dict):
        raise FieldError(cls.__name__, f"must be a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in set(data) - set(fields))
    if unknown:
        raise FieldError(unknown[0][:40], f"unknown key; valid: {', '.join(sorted(fields))}")
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(cls) if f.init} if base is not None else {}
    for name, value in data.items():
        section = _section_type(cls, name)
        if section is not None and isinstance(value, dict):
            current = values.get(name)
            try:
                value = build_config(section, value, base=current if current is not None else section())
            except FieldError as exc:
                raise FieldError(f"{name}.{exc.field}", exc.problem) from None
        values[name] = value
    try:
        return cls(**values)
    except TypeError as exc:  # a required field left out
        raise FieldError(cls.__name__, str(exc)) from None


def _section_type(cls: type, name: str) -> type | None:
    """The config class of field ``name`` of ``cls`` when that field is a nested section."""
    for f, tp in _typed_fields(cls):
        if f.name == name and _is_config(tp):
            return tp
    return None
