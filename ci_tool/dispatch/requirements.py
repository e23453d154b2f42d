"""The two clients dispatch drives, imported with a clear error where they are missing.

python-jenkins and PyGithub are ci-tool's own dependencies, but a checkout run without installing it (a
machine without network, `PYTHONPATH=.`) may lack them. Such a checkout holds a `jenkins/` folder of
pipelines, and Python imports it as a namespace package when python-jenkins is absent, so `import jenkins`
succeeds and the first `jenkins.Jenkins` fails far from the cause. This checks the module for its client class
and names the distribution to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ci_tool.errors import DispatchError


def client_module(module: str, *, client: str, distribution: str) -> ModuleType:
    """`module` imported, holding `client`; else a DispatchError naming `distribution`."""
    try:
        imported = importlib.import_module(module)
    except ImportError as missing:
        raise _missing(module, client, distribution, f"importing it failed ({missing}).") from None
    if not hasattr(imported, client):
        where = getattr(imported, "__file__", None) or ", ".join(getattr(imported, "__path__", [])) or "?"
        raise _missing(module, client, distribution, f"`{module}` is {where}, which has no `{client}`.")
    return imported


def _missing(module: str, client: str, distribution: str, found: str) -> DispatchError:
    return DispatchError(
        f"expected the `{distribution}` package (module `{module}` with `{module}.{client}`): {found}",
        hint=f"pip install '{distribution}' (installing ci-tool, `pip install -e .`, installs it)",
    )
