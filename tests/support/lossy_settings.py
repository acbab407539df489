"""chartr's settings plus a test-only fault (``tests.support.lossy_rows``): every 50th
acknowledged append loses its last row after the commit. Only the history checker's
fault test starts a server with it."""

from chartr.settings import *  # noqa: F403
from chartr.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.support.lossy_rows.LossyRowsConfig"]
