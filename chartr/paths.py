"""Where chartr keeps its state: one data dir and one config dir.

Both are resolved from the environment only, so the same rules hold for a
developer checkout, a systemd unit and the Docker image (which sets
CHARTR_DATA_DIR=/data and XDG_CONFIG_HOME=/config). Resolving writes nothing:
``prepare_state`` creates the dirs and the secret key, and only what sets an
installation up calls it (``manage.py migrate``, the server's start).
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path

from chartr import config
from kernel.files import ensure_private_dir

SECRET_KEY_FILENAME = "secret_key"
ENV_FILENAME = "chartr.env"


def data_dir_origin(environ: Mapping[str, str] = os.environ) -> str:
    """The variable the data dir comes from: CHARTR_DATA_DIR, else XDG_DATA_HOME, else HOME."""
    if environ.get("CHARTR_DATA_DIR"):
        return "CHARTR_DATA_DIR"
    return "XDG_DATA_HOME" if environ.get("XDG_DATA_HOME") else "HOME"


def resolve_data_dir(environ: Mapping[str, str] = os.environ) -> Path:
    origin = data_dir_origin(environ)
    if origin == "CHARTR_DATA_DIR":
        return Path(config.value("CHARTR_DATA_DIR", environ)).expanduser()
    if origin == "XDG_DATA_HOME":
        return Path(environ["XDG_DATA_HOME"]).expanduser() / "chartr"
    return Path(os.path.expanduser("~")) / ".local" / "share" / "chartr"


def resolve_config_dir(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get("XDG_CONFIG_HOME"):
        return Path(environ["XDG_CONFIG_HOME"]).expanduser() / "chartr"
    return Path(os.path.expanduser("~")) / ".config" / "chartr"


def read_secret_key(config_dir: Path) -> str:
    """The persisted secret key, or "" before ``prepare_state`` made one."""
    try:
        return (config_dir / SECRET_KEY_FILENAME).read_text().strip()
    except FileNotFoundError:
        return ""


def prepare_state(environ: Mapping[str, str] = os.environ) -> None:
    """Create the data and config dirs (owner-only) and, unless CHARTR_SECRET_KEY is set, the secret key."""
    ensure_private_dir(resolve_data_dir(environ))
    config_dir = ensure_private_dir(resolve_config_dir(environ))
    if not config.value("CHARTR_SECRET_KEY", environ):
        load_or_create_secret_key(config_dir)


def load_or_create_secret_key(config_dir: Path) -> str:
    """Return the persisted secret key, generating it on the very first start.

    Several workers may start at once, so the key is written to a temp file and
    published with ``os.link``, which fails if another process won the race;
    the loser then reads the winner's key. Nobody ever sees a half-written file.
    """
    key_path = config_dir / SECRET_KEY_FILENAME
    existing = read_secret_key(config_dir)
    if existing:
        return existing

    new_key = secrets.token_urlsafe(64)
    fd, tmp_name = tempfile.mkstemp(dir=config_dir, prefix=".secret_key.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(new_key + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp_name, key_path)
        except FileExistsError:
            return key_path.read_text().strip()
    finally:
        os.unlink(tmp_name)
    return new_key
