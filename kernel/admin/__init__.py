"""Glue between the Django admin and the services.

The admin never saves a model itself: every create, edit, archive, unarchive
and delete calls the same service the API calls, and every one of them is
written to the admin history (LogEntry) with the acting user.

- ``forms``: ``ServiceForm`` and ``ServiceModelAdmin``, the write-through-a-service form and admin;
- ``confirm``: confirmation pages, a preview half and a perform half;
- ``archive``: ``ArchivableAdmin`` and the live/archived list filter;
- ``runs``: ``ReadOnlyMixin``, and ``CommandRunAdmin`` for a command's run records.
"""

from kernel.admin.archive import ArchivableAdmin, ArchivedListFilter
from kernel.admin.confirm import CONFIRM_FIELD, Confirmation, ConfirmationItem, ConfirmingAdminMixin, plural
from kernel.admin.forms import ServiceForm, ServiceModelAdmin
from kernel.admin.runs import CommandRunAdmin, ReadOnlyMixin

__all__ = [
    "CONFIRM_FIELD",
    "ArchivableAdmin",
    "ArchivedListFilter",
    "CommandRunAdmin",
    "Confirmation",
    "ConfirmationItem",
    "ConfirmingAdminMixin",
    "ReadOnlyMixin",
    "ServiceForm",
    "ServiceModelAdmin",
    "plural",
]
