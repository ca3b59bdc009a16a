"""Parameter checks through the shared declarative helper, raised as the package's configuration errors.

A wrong type raises :class:`~janus_sa.errors.ConfigTypeError` (a ``TypeError``), a wrong value
:class:`~janus_sa.errors.ConfigError` (a ``ValueError``); both keep the shared message shape
``"<owner>: <name> must be <what is accepted>; got <value>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icml25_shared.validation import check_params

from janus_sa.errors import ConfigError, ConfigTypeError


def validate(params: Mapping[str, Any], constraints: Mapping[str, list], *, owner: str) -> None:
    """Check ``params`` against ``constraints`` (see :func:`icml25_shared.validation.check_params`)."""
    try:
        check_params(dict(params), dict(constraints), owner=owner)
    except TypeError as err:
        raise ConfigTypeError(str(err)) from None
    except ValueError as err:
        raise ConfigError(str(err)) from None
