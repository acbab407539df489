"""A pytest plugin (loaded with -p, before pytest-django reads settings) that keeps the test run's data and config dirs out of the operator's home.

It runs first, so every test process works in a throwaway location, which it
prepares as ``manage.py migrate`` would (dirs and secret key; settings write nothing).
"""

import os
import tempfile

from chartr import config, paths

if not config.value("CHARTR_TEST_KEEP_DIRS"):
    _root = tempfile.mkdtemp(prefix="chartr-test-")
    os.environ["CHARTR_DATA_DIR"] = os.path.join(_root, "data")
    os.environ["XDG_CONFIG_HOME"] = os.path.join(_root, "config")
    os.environ.pop("CHARTR_SECRET_KEY", None)
paths.prepare_state()
