"""The embedded local runtime: the instance in a directory, its admin, runner, handlers and tasks."""

from typing import TYPE_CHECKING

from sleeper.core import lazy_face

if TYPE_CHECKING:
    from sleeper.runtime.local.api import LocalApi as LocalApi
    from sleeper.runtime.local.handlers import default_handlers as default_handlers
    from sleeper.runtime.local.instance import LocalInstance as LocalInstance
    from sleeper.runtime.local.runner import LocalRunner as LocalRunner


__getattr__, __dir__ = lazy_face(__name__, __file__)
