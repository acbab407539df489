"""ApiToken moved to the tokens app and ImportRun to the legacy app.

State only: their tables keep their names (``chartr_apitoken``,
``chartr_importrun``, held by ``Meta.db_table`` in the new apps), so an
existing database migrates without touching a row.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("chartr", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="ApiToken"),
                migrations.DeleteModel(name="ImportRun"),
            ],
            database_operations=[],
        ),
    ]
