"""`localjudge view`: review runs live and label them in the browser, offline (Starlette + uvicorn, extra [serve]).

runs.py      the runs on show and their pages (SQL: store/)     queue.py     labelling orders
stats.py     the live agreement panel                           compare.py   two runs side by side
pages.py     server-rendered, escaped HTML                      security.py  Host, API key, CSRF, CSP
app.py       routes and the JSON API                            static/      the app's own JS and CSS
panels.py    panels' and cascades' members beside their verdict
"""

from __future__ import annotations

from .app import ViewConfig, create_app

__all__ = ["ViewConfig", "create_app"]
