from django.db.backends.sqlite3 import base, schema

from chartr.db_backends import CascadingForeignKeysMixin


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
