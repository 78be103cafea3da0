"""The app's own script and style sheet (package data), by name; any other name is a 404."""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from .base import err

TYPES = {"view.js": "text/javascript; charset=utf-8", "view.css": "text/css; charset=utf-8"}


def static(request: Request) -> Response:
    """GET /static/{name}."""
    name = request.path_params["name"]
    if name not in TYPES:
        return err(404, f"no static file {name!r}")
    text = resources.files("localjudge.view").joinpath("static").joinpath(name).read_text(encoding="utf-8")
    return Response(text, media_type=TYPES[name])
