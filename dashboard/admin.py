"""The admin site's own wording; the dashboard itself is chartr/templates/admin/index.html."""

from django.contrib import admin

admin.site.site_header = "chartr administration"
admin.site.site_title = "chartr admin"
# chartr has no public site; "View site" opens the API docs, which a staff session may read.
admin.site.site_url = "/api/v1/docs"
