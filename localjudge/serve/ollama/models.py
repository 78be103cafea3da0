"""Ollama's model routes on `localjudge serve`: `/api/tags`, `/api/ps` (the one served model, always
loaded), `/api/show` (its details; 404 for any other name), `/api/version` (localjudge's version)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response

from ...http import ClientGone
from ..core.errors import APIError, bad_request
from .translate import error, json_answer, read_request, served_model
from .wire import (
    OllamaModelDetails,
    OllamaRunning,
    OllamaRunningModel,
    OllamaShowRequest,
    OllamaShowResponse,
    OllamaTagModel,
    OllamaTags,
    OllamaVersion,
)

if TYPE_CHECKING:
    from ..core.state import ServerState


def _details(state: ServerState) -> OllamaModelDetails:
    family = state.identity.model_id.split("/")[-1].split("-")[0].lower() or "gguf"
    return OllamaModelDetails(family=family, families=[family], parameter_size="", quantization_level="")


def _tag(state: ServerState) -> dict[str, Any]:
    modified = datetime.fromtimestamp(state.counters.started, UTC).isoformat().replace("+00:00", "Z")
    return {
        "name": state.model_name,
        "model": state.model_name,
        "modified_at": modified,
        "size": 0,
        "digest": state.identity.digest,
        "details": _details(state),
    }


async def _keyed(state: ServerState, request: Request) -> APIError | None:
    from ..core.handling import check_key

    try:
        check_key(state, request)
    except APIError as e:
        return e
    return None


async def tags(state: ServerState, request: Request) -> Response:
    """GET /api/tags: the served model, then its aliases."""
    if e := await _keyed(state, request):
        return error(e)
    tag = _tag(state)
    names = [{"name": a, "model": a} for a in state.config.aliases]  # the aliases of `serve --alias`, after it
    return json_answer(OllamaTags(models=[OllamaTagModel(**tag), *(OllamaTagModel(**{**tag, **n}) for n in names)]))


async def ps(state: ServerState, request: Request) -> Response:
    """GET /api/ps: the served model, always loaded (it never expires)."""
    if e := await _keyed(state, request):
        return error(e)
    m = OllamaRunningModel(**_tag(state), expires_at="9999-12-31T23:59:59Z", size_vram=0, context_length=state.engine.n_ctx)
    return json_answer(OllamaRunning(models=[m]))


async def show(state: ServerState, request: Request) -> Response:
    """POST /api/show: the served model's details (404 for any other name)."""
    try:
        req = await read_request(state, request, OllamaShowRequest)
        if not (req.model or req.name):
            raise bad_request(
                "model: give the model's name (`model`, or `name` in older clients); GET /api/tags lists it", param="model"
            )
        served_model(state, req.model or req.name)
    except APIError as e:
        return error(e)
    except ClientGone:
        return Response(status_code=499)
    ident = state.identity
    info = {"general.name": ident.model_id, "general.architecture": _details(state).family, "localjudge.backend": ident.backend}
    return json_answer(
        OllamaShowResponse(
            modelfile=f"FROM {ident.model_id}",
            parameters=f"num_ctx {state.engine.n_ctx}",
            template="",
            details=_details(state),
            model_info={**info, "localjudge.context_length": state.engine.n_ctx},
            capabilities=["completion", "thinking"],
            modified_at=_tag(state)["modified_at"],
        )
    )


async def version(state: ServerState, request: Request) -> Response:
    """GET /api/version: localjudge's version."""
    from ... import __version__

    return json_answer(OllamaVersion(version=__version__))
