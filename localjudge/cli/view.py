"""`localjudge view [RUN_DIR ...] [--runs-root DIR]`: review runs live and label them in the browser, offline.

    localjudge view runs/quickstart                  one run, on http://127.0.0.1:8765/
    localjudge view --runs-root runs                 every run directory under runs/ (new ones appear)
    localjudge view runs/a --host 0.0.0.0 --api-key KEY --allow-host judge.lan   beyond loopback: a key is required

The app and its routes: localjudge/view/. Labels go into each run's own results.sqlite.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import InputError
from .options import http_limit_options

BUSY = {"error": "the view has too many open connections; retry in a second"}


@click.command(name="view")
@click.argument("run_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--runs-root", type=click.Path(path_type=Path, file_okay=False), help="Show every run directory under DIR.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; beyond loopback needs --api-key.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--api-key", envvar="LOCALJUDGE_API_KEY", default=None, help="Key the browser must give once (/?key=KEY).")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Extra Host header value to accept (a name this machine has).")
@click.option("--align-model", default=None, help="Model the align button uses [default: the run's model id].")
@click.option("--threads", type=click.IntRange(1), default=1, show_default=True, help="CPU threads of the align button's model.")
@http_limit_options
@click.option("--log-level", default="warning", show_default=True, type=click.Choice(["debug", "info", "warning", "error"]))
def view_cmd(
    run_dirs: tuple[Path, ...],
    runs_root: Path | None,
    host: str,
    port: int,
    api_key: str | None,
    allow_hosts: tuple[str, ...],
    align_model: str | None,
    threads: int,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    log_level: str,
) -> None:
    """Open a local web app over run directories: runs, live progress, rows, row detail, comparison, keyboard
    labelling into the run's store and a live agreement panel. Nothing is fetched from the network."""
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        raise InputError("localjudge view needs the serve extra: pip install 'localjudge[serve]'") from None
    from ..http import busy_response, protocol_class, throttle_logs
    from ..serve.server import _Server, bind, is_loopback
    from ..view import ViewConfig, create_app

    if not is_loopback(host) and not api_key:
        raise InputError(
            f"--host {host} would expose your runs beyond this machine; give --api-key KEY (or set LOCALJUDGE_API_KEY), "
            "or bind 127.0.0.1"
        )
    if not run_dirs and runs_root is None:
        runs_root = Path("runs")
        if not runs_root.is_dir():
            raise InputError("no run to show: pass RUN_DIR(s) or --runs-root DIR (the --out directories of `localjudge run`)")
    config = ViewConfig(
        list(run_dirs),
        runs_root,
        api_key=api_key,
        allowed_hosts={host, *allow_hosts},
        align_model=align_model,
        align_options={"n_threads": threads},
        max_connections=max_connections,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
    )
    app = create_app(config)
    sock = bind(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    url = f"http://{shown}:{bound[1]}/" + (f"?key={api_key}" if api_key else "")
    server = _Server(
        uvicorn.Config(
            app,
            log_level=log_level,
            lifespan="off",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=2,
            # before the Host and key checks: a connection limit, a header deadline (the same code as serve's)
            http=protocol_class(max_connections, header_timeout, busy_response(BUSY), "localjudge.view"),
        ),
        banner=f"localjudge view on {url} (Ctrl-C to stop)",
    )
    throttle_logs("localjudge.view")
    try:
        server.run(sockets=[sock])
    finally:
        app.state_runs.close()
