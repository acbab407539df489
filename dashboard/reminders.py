"""The first-run reminder: while ``<config dir>/initial-admin-password`` exists, every admin page
asks a superuser to change the generated password and delete the file.

``ensure_initial_admin`` (dashboard/services.py) writes that file on the first start. Whether the
password in it still logs in is a password hash check, which is slow by design: it runs once per
session for each (file, stored hash) pair and is kept in the session, so changing the password (a new
stored hash) or replacing the file asks again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest

from dashboard.services import INITIAL_ADMIN_PASSWORD_FILENAME

SESSION_KEY = "chartr_initial_password"


@dataclass(frozen=True)
class InitialPasswordReminder:
    path: Path
    #: Whether the operator's password is still the one in the file (change it first, then delete the file).
    unchanged: bool


def _still_initial(request: HttpRequest, path: Path) -> bool:
    user = request.user
    try:
        stat, password = path.stat(), path.read_text().strip()
    except OSError:
        return False
    key = hashlib.sha256(f"{path}|{stat.st_mtime_ns}|{user.pk}|{user.password}".encode()).hexdigest()
    cached = request.session.get(SESSION_KEY)
    if isinstance(cached, list) and len(cached) == 2 and cached[0] == key:
        return bool(cached[1])
    unchanged = bool(password) and user.check_password(password)
    request.session[SESSION_KEY] = [key, unchanged]
    return unchanged


def initial_password_reminder(request: HttpRequest) -> dict[str, InitialPasswordReminder | None]:
    """Template context (a context processor): ``initial_password_reminder`` on admin pages a superuser
    sees while the file exists, else None."""
    # A token's client (the API docs) is no user: only a logged-in superuser is told.
    user = getattr(request, "user", None)
    path = Path(settings.CONFIG_DIR) / INITIAL_ADMIN_PASSWORD_FILENAME
    if not getattr(user, "is_superuser", False) or not hasattr(request, "session") or not path.is_file():
        return {"initial_password_reminder": None}
    return {"initial_password_reminder": InitialPasswordReminder(path=path, unchanged=_still_initial(request, path))}
