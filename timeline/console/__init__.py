"""The timeline in the operator's console (the Django admin): the agent's timeline page
(``timeline_page``, ``entries``, ``rendering``), its newest interaction request (``request``) and the
fleet search page (``fleet_page``, mounted by ``urls``)."""
