"""Data snapshots: rotating copies of chartr's whole state inside its data dir.

Not to be confused with the ``snapshots`` app, which holds *agent* snapshots.
A data snapshot guards against bad runs (a buggy client, a bad import), not
against losing the disk: that is what a backup of the volumes is for.
"""
