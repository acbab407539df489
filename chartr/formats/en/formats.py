"""Date formats for English pages (the admin): seconds and the time zone named, ISO-style dates.

Django's own English formats stop at the minute ("Dec. 1, 2026, 9:58 a.m."),
name no zone, and end in a period that doubles up at the end of a sentence.
"""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
