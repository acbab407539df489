from __future__ import annotations

from django.db import models


class DataSnapshotAccess(models.Model):
    """No table: it only carries the permissions of the data snapshot admin page,
    so they can be granted to staff who are not superusers."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_data_snapshots", "Can view data snapshots"),
            ("take_data_snapshot", "Can take a data snapshot"),
        ]
        verbose_name = "data snapshot access"

    def __str__(self) -> str:
        return "data snapshot access"
