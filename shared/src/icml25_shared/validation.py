"""One declarative way to validate configuration, shared by every package.

In the spirit of scikit-learn's ``_parameter_constraints`` / ``validate_params``: each parameter maps to a
list of constraints, and a value is accepted when it meets any one of them. A rejected value raises

- :class:`TypeError` when no constraint accepts its *type* (a string where an int is wanted), and
- :class:`ValueError` when some constraint accepts its type but not its value (an int out of range, a
  string that is not one of the options),

with one message shape: ``"<owner>: <name> must be <what is accepted>; got <value>"``.

Constraints
-----------
- :class:`Interval` (``Interval(int, 1, None)``: an int >= 1; ``Interval(float, 0, 1, closed="neither")``:
  a real in (0, 1)). ``bool`` is never an int or a real here (``True`` for ``n_jobs`` is a mistake).
- :class:`Options` (``Options(str, {"aps", "lac"})``), or a plain ``set``/``frozenset`` of allowed values.
- ``None``: the value None.
- a type or a tuple of types (``str``, ``np.ndarray``, ``(list, tuple)``): an instance of it.
- the strings ``"boolean"`` (bool or numpy bool), ``"random_state"`` (None, a non-negative int, a
  SeedSequence, a Generator or a RandomState), ``"callable"``, ``"array-like"`` (anything numpy can turn
  into a numeric array: a list, a tuple, an array, a tensor).

Examples
--------
>>> from icml25_shared.validation import Interval, Options, check_params
>>> check_params({"alpha": 0.1, "score": "aps"},
...              {"alpha": [Interval(float, 0, 1, closed="neither")], "score": [Options(str, {"aps", "lac"})]},
...              owner="KandinskyCP")
>>> check_params({"alpha": 1.5}, {"alpha": [Interval(float, 0, 1, closed="neither")]}, owner="KandinskyCP")
Traceback (most recent call last):
...
ValueError: KandinskyCP: alpha must be a float in (0, 1); got 1.5
>>> check_params({"alpha": "0.1"}, {"alpha": [Interval(float, 0, 1, closed="neither")]}, owner="KandinskyCP")
Traceback (most recent call last):
...
TypeError: KandinskyCP: alpha must be a float in (0, 1); got str '0.1'
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

__all__ = ["Constraint", "Interval", "Options", "check_param", "check_params", "validate_params"]

F = TypeVar("F", bound=Callable[..., Any])

_NAMED = ("boolean", "random_state", "callable", "array-like")


@dataclass(frozen=True)
class Interval:
    """A number of one kind (``int`` or ``float``) within bounds.

    Parameters
    ----------
    kind : {int, float}
        ``int`` accepts integral values (Python or numpy ints); ``float`` accepts any real (ints too).
    low, high : float or None
        The bounds; None leaves that side open to infinity.
    closed : {"both", "left", "right", "neither"}, default "both"
        Which bounds belong to the interval.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: Literal["both", "left", "right", "neither"] = "both"

    def __post_init__(self) -> None:
        if self.kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float; got {self.kind!r}")
        if self.closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval closed must be 'both', 'left', 'right' or 'neither'; got {self.closed!r}")

    def accepts_type(self, value: Any) -> bool:
        """Whether ``value`` is a number of this interval's kind (bool never is)."""
        if isinstance(value, (bool, np.bool_)):
            return False
        wanted = numbers.Integral if self.kind is int else numbers.Real
        return isinstance(value, wanted)

    def __call__(self, value: Any) -> bool:
        """Whether ``value`` is of this kind, not NaN, and within the bounds."""
        if not self.accepts_type(value):
            return False
        if isinstance(value, numbers.Real) and math.isnan(float(value)):
            return False
        left_closed = self.closed in ("both", "left")
        right_closed = self.closed in ("both", "right")
        if self.low is not None and (value < self.low or (value == self.low and not left_closed)):
            return False
        if self.high is not None and (value > self.high or (value == self.high and not right_closed)):
            return False
        return True

    def __str__(self) -> str:
        noun = "an int" if self.kind is int else "a float"
        if self.low is None and self.high is None:
            return noun
        if self.high is None:
            return f"{noun} {'>=' if self.closed in ('both', 'left') else '>'} {_num(self.low)}"
        if self.low is None:
            return f"{noun} {'<=' if self.closed in ('both', 'right') else '<'} {_num(self.high)}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{noun} in {left}{_num(self.low)}, {_num(self.high)}{right}"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values of one type.

    Parameters
    ----------
    kind : type
        The values' type (``str``, ``int``...); a value of another type is a TypeError.
    values : iterable
        The accepted values.
    """

    kind: type
    values: frozenset[Any]

    def __init__(self, kind: type, values: Iterable[Any]) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "values", frozenset(values))

    def accepts_type(self, value: Any) -> bool:
        """Whether ``value`` is of the options' type (bool is not an int)."""
        if self.kind is not bool and isinstance(value, (bool, np.bool_)):
            return False
        return isinstance(value, self.kind)

    def __call__(self, value: Any) -> bool:
        """Whether ``value`` is one of the options."""
        try:
            return self.accepts_type(value) and value in self.values
        except TypeError:  # an unhashable value of the right type
            return False

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in sorted(self.values, key=repr))


Constraint = Interval | Options | type | tuple | set | frozenset | str | None


def _num(x: float | None) -> str:
    return "inf" if x is None else (f"{x:g}" if isinstance(x, float) else str(x))


def _describe(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, (set, frozenset)):
        return "one of " + ", ".join(repr(v) for v in sorted(constraint, key=repr))
    if isinstance(constraint, type):
        return f"a {constraint.__name__}"
    if isinstance(constraint, tuple):
        return "a " + " or ".join(t.__name__ for t in constraint)
    if constraint == "boolean":
        return "a bool"
    if constraint == "random_state":
        return "None, a non-negative int, a SeedSequence or a numpy Generator"
    if constraint == "callable":
        return "a callable"
    if constraint == "array-like":
        return "an array-like of numbers"
    return str(constraint)


def _is_array_like(value: Any) -> bool:
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        return False
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor: numeric by construction
        return True
    try:
        array = np.asarray(value)
    except Exception:  # noqa: BLE001 - a value numpy cannot read is simply not array-like
        return False
    return array.dtype.kind in "biufc"


def _meets(constraint: Any, value: Any) -> tuple[bool, bool]:
    """(type accepted, value accepted) of ``value`` under one constraint."""
    if constraint is None:
        return value is None, value is None
    if isinstance(constraint, (Interval, Options)):
        type_ok = constraint.accepts_type(value)
        return type_ok, type_ok and constraint(value)
    if isinstance(constraint, (set, frozenset)):
        kinds = {type(v) for v in constraint}
        type_ok = any(isinstance(value, k) for k in kinds) and not (
            isinstance(value, bool) and bool not in kinds)
        try:
            return type_ok, type_ok and value in constraint
        except TypeError:
            return type_ok, False
    if isinstance(constraint, (type, tuple)):
        ok = isinstance(value, constraint)
        return ok, ok
    if constraint == "boolean":
        ok = isinstance(value, (bool, np.bool_))
        return ok, ok
    if constraint == "callable":
        ok = callable(value)
        return ok, ok
    if constraint == "array-like":
        ok = _is_array_like(value)
        return ok, ok
    if constraint == "random_state":
        if isinstance(value, (np.random.Generator, np.random.RandomState, np.random.SeedSequence)) or value is None:
            return True, True
        if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
            return True, int(value) >= 0
        return False, False
    raise TypeError(f"unknown constraint {constraint!r}; use Interval, Options, a set, None, a type or one of "
                    f"{', '.join(repr(n) for n in _NAMED)}")


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    if isinstance(value, (str, bytes, list, tuple, dict)) or not isinstance(value, (numbers.Number, type(None))):
        return f"{type(value).__name__} {text}"
    return text


def check_param(name: str, value: Any, constraints: Sequence[Any], *, owner: str | None = None) -> Any:
    """Check one parameter against its constraints; return it unchanged.

    Parameters
    ----------
    name : str
        The parameter's name, as the user wrote it.
    value : object
        Its value.
    constraints : sequence
        Accepted forms (see the module docstring); the value must meet one of them.
    owner : str, optional
        The class or function, named first in the message.

    Returns
    -------
    object
        ``value``.

    Raises
    ------
    TypeError
        When no constraint accepts the value's type.
    ValueError
        When a constraint accepts its type but not its value (out of range, not an option, NaN).
    """
    if isinstance(constraints, (Interval, Options, type, str, set, frozenset)) or constraints is None:
        constraints = [constraints]
    type_seen = False
    for constraint in constraints:
        type_ok, value_ok = _meets(constraint, value)
        if value_ok:
            return value
        type_seen = type_seen or type_ok
    accepted = _join([_describe(c) for c in constraints])
    prefix = f"{owner}: " if owner else ""
    message = f"{prefix}{name} must be {accepted}; got {_shown(value)}"
    raise (ValueError if type_seen else TypeError)(message)


def check_params(params: Mapping[str, Any], constraints: Mapping[str, Sequence[Any]], *,
                 owner: str | None = None) -> None:
    """Check every parameter of ``params`` that ``constraints`` names (in the order of ``constraints``).

    Parameters
    ----------
    params : mapping
        Parameter name -> value (``vars(self)``, ``self.get_params()``, a dict of arguments).
    constraints : mapping
        Parameter name -> its constraints; a name missing from ``params`` is skipped.
    owner : str, optional
        The class or function, named first in every message.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_param`, for the first parameter that fails.
    """
    for name, accepted in constraints.items():
        if name in params:
            check_param(name, params[name], accepted, owner=owner)


def validate_params(constraints: Mapping[str, Sequence[Any]]) -> Callable[[F], F]:
    """Decorate a function so that its arguments are checked against ``constraints`` on every call.

    Parameters
    ----------
    constraints : mapping
        Parameter name -> its constraints (every name must be a parameter of the function).

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> @validate_params({"n": [Interval(int, 1, None)]})
    ... def repeat(word, *, n=2):
    ...     return word * n
    >>> repeat("ab", n=0)
    Traceback (most recent call last):
    ...
    ValueError: repeat: n must be an int >= 1; got 0
    """

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"validate_params: {func.__qualname__} has no parameters {sorted(unknown)}")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            check_params(bound.arguments, constraints, owner=func.__qualname__)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _join(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if len(unique) == 1:
        return unique[0]
    return ", ".join(unique[:-1]) + " or " + unique[-1]
