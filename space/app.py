"""The SPEED-Bench leaderboard Space: Browse, Compare, Submit, About.

Run locally: ``python space/app.py`` (serves on 127.0.0.1, port ``GRADIO_SERVER_PORT`` or 7860,
store ``SPEEDBENCH_DB``). The layout follows the Hub's leaderboard template: texts, columns,
population and submission each live in their own module under ``sbspace/``; the logic they call
is :mod:`speedbench.leaderboard`.
"""
from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import speedbench  # noqa: F401  (installed, or copied next to app.py on the Space)
except ImportError:  # running from a checkout of the repository
    sys.path.insert(0, str(HERE.parent))

import gradio as gr  # noqa: E402

from sbspace import about, compare, populate, submission  # noqa: E402
from sbspace.connections import ConnectionGuard  # noqa: E402
from sbspace.envs import Settings, hub_client_with_timeouts  # noqa: E402
from sbspace.guard import RequestGuard, UploadSweeper  # noqa: E402
from speedbench.leaderboard.admission import Admission  # noqa: E402
from speedbench.leaderboard.known_builds import KnownBuilds  # noqa: E402
from speedbench.leaderboard.mirror import HubMirror  # noqa: E402
from speedbench.leaderboard.services import BoardServices, start_services  # noqa: E402
from speedbench.leaderboard.store import LeaderboardStore  # noqa: E402

log = logging.getLogger("speedbench.space")

# Gradio's own sweep of the files it registered: (every, older than) seconds. It never sees an upload
# dropped mid-body or orphaned by a crash; sbspace/guard.py's UploadSweeper removes those.
UPLOAD_SWEEP_S = (1800, 7200)

warnings.filterwarnings("ignore", message=".*Pandas4Warning.*")
warnings.filterwarnings("ignore", category=FutureWarning, module="gradio")


def _prepare(settings: Settings, store: LeaderboardStore | None, known_builds: KnownBuilds | None,
             mirror: HubMirror | None) -> BoardServices:
    """The board's services, started by the core (speedbench.leaderboard.services) from the Space's settings."""
    return start_services(settings.db_path, settings.known_builds, settings.budget, settings.mirror_repo,
                          settings.uploads_per_hour, store=store, known_builds=known_builds, mirror=mirror)


def _note_box(services: BoardServices) -> gr.Textbox:
    text = services.mirror_note()
    return gr.Textbox(value=text, visible=bool(text))


def _board_functions(cache: populate.BoardCache):
    """``table`` (the filtered, sorted board) and ``refresh_choices`` (every dropdown's choices
    from what is stored now), the callbacks several tabs share; both read the rows cached until
    the store changes (``populate.BoardCache``), so a page load costs the same at any board size."""

    def table(search, engines, methods, families, isl, sort_by, descending, show_ci):
        frame, datatypes, widths = populate.board_frame(
            cache.rows(), search=search, engines=engines, methods=methods, families=families,
            isl=isl, sort_by=sort_by, descending=descending, show_ci=show_ci)
        return gr.Dataframe(value=frame, datatype=datatypes, column_widths=widths)

    def refresh_choices():
        found = cache.choices()
        labels = cache.entry_labels()
        return (gr.Dropdown(choices=found["engines"]), gr.Dropdown(choices=found["methods"]),
                gr.Dropdown(choices=found["families"]), gr.Dropdown(choices=found["isls"]),
                gr.Dropdown(choices=labels))

    return table, refresh_choices


class _Browse:
    """The Browse tab's components that other tabs update. (A plain class: the tests load app.py
    without registering it in sys.modules, which @dataclass needs.)"""

    def __init__(self, controls: list, filters: list, board_table: gr.Dataframe):
        self.controls = controls  # search, engines, methods, families, isl, sort_by, descending, show_ci
        self.filters = filters  # engines, methods, families, isl: the dropdowns whose choices follow the store
        self.board_table = board_table


def _browse_tab(rows, found, table) -> _Browse:
    frame, datatypes, widths = populate.board_frame(rows)
    with gr.Tab("Browse", id="browse"):
        with gr.Row():
            search = gr.Textbox(label="Search", placeholder="model, drafter, method, GPU ...",
                                elem_id="search", scale=3)
            sort_by = gr.Dropdown(choices=[c.header for c in populate.visible_columns(rows, None, False)],
                                  value="Mean AL", label="Sort by", elem_id="sort-by", scale=1)
            descending = gr.Checkbox(value=True, label="Descending", elem_id="descending", scale=0)
            show_ci = gr.Checkbox(value=False, label="Show 95% CIs", elem_id="show-ci", scale=0)
        with gr.Row():
            engines = gr.Dropdown(choices=found["engines"], multiselect=True, label="Engine", elem_id="f-engine")
            methods = gr.Dropdown(choices=found["methods"], multiselect=True, label="SD method",
                                  elem_id="f-method")
            families = gr.Dropdown(choices=found["families"], multiselect=True, label="Model family",
                                   elem_id="f-family")
            isl = gr.Dropdown(choices=found["isls"], value="any", label="ISL (throughput bucket)",
                              elem_id="f-isl")
        board_table = gr.Dataframe(value=frame, datatype=datatypes, column_widths=widths, interactive=False,
                                   pinned_columns=1, elem_id="board", label="Entries", max_height=600)
        controls = [search, engines, methods, families, isl, sort_by, descending, show_ci]
        for control in controls:  # searches share two worker threads: a flood waits, uploads do not
            control.change(table, controls, board_table, api_visibility="private", concurrency_limit=2,
                           concurrency_id="browse")
    return _Browse(controls, [engines, methods, families, isl], board_table)


def _compare_tab(store: LeaderboardStore, admission: Admission) -> list:
    """The Compare tab; returns its entries dropdown, whose choices follow the store."""
    with gr.Tab("Compare", id="compare"):
        with gr.Row():
            # allow_custom_value: the API may name entries added after the page was built; compare()
            # keeps only ids the store holds
            picked = gr.Dropdown(choices=compare.entry_choices(store), multiselect=True, scale=4,
                                 allow_custom_value=True, elem_id="compare-entries",
                                 label=f"Entries (the first is the reference; at most {compare.MAX_ENTRIES})")
            pareto_isl = gr.Dropdown(choices=compare.PARETO_ISLS, value="any", label="ISL for Pareto curves",
                                     elem_id="compare-isl", scale=1)
            compare_button = gr.Button("Compare", variant="primary", elem_id="compare-button", scale=0)
        # plain text: the note names entry ids, which must never render as markup
        compare_note = gr.Textbox(show_label=False, interactive=False, container=False, elem_id="compare-note")
        side_by_side = gr.Dataframe(label="AL per category, side by side", interactive=False,
                                    elem_id="compare-side")
        differences = gr.Dataframe(label="Paired AL difference (entry - reference) on shared prompts",
                                   interactive=False, elem_id="compare-diff")
        pareto = gr.LinePlot(x="user_tps", y="output_tps", color="entry", label="Pareto curves",
                             x_title="user tokens/s (median)", y_title="output tokens/s",
                             tooltip=["entry", "concurrency", "user_tps", "output_tps", "client_lagged_pct"],
                             elem_id="pareto")

        def run_compare(ids, isl_value):
            side, diffs, points, note = compare.compare(store, ids, isl_value, admission)
            return side, diffs, points, note

        compare_button.click(run_compare, [picked, pareto_isl],
                             [side_by_side, differences, pareto, compare_note], api_name="compare")
    return [picked]


def _submit_tab(settings: Settings, services: BoardServices, browse: _Browse, followers: list, table,
                refresh_choices, note) -> None:
    """The Submit tab and the hidden ``submit_bundle`` endpoint; a submission refreshes the board
    and every dropdown in ``browse.filters + followers``."""
    with gr.Tab("Submit", id="submit"):
        gr.Markdown(about.SUBMIT_GUIDE)
        upload = gr.File(label="Result bundle (.tar.gz or .zip)", file_types=[".gz", ".tgz", ".zip"],
                         type="filepath", elem_id="bundle-upload")
        submit_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
        # plain text: a rejection quotes what the submitter sent, which must never render
        status = gr.Textbox(label="Result", interactive=False, elem_id="submit-status", lines=2)
        result = gr.JSON(visible=False)

        def handle(path, request: gr.Request | None = None):
            refused = submission.over_quota(services.quota, path, request)  # before the file is read
            if refused is not None:
                return refused
            return submission.handle_upload(path, services.store, services.known_builds, settings.limits,
                                            services.admission, services.sync)

        # the controls are named, not *args: Gradio passes gr.Request only to a named parameter
        def on_submit(path, search, engines, methods, families, isl, sort_by, descending, show_ci,
                      request: gr.Request):
            outcome = handle(path, request)
            control_values = (search, engines, methods, families, isl, sort_by, descending, show_ci)
            return (outcome.text(), outcome.to_dict(), table(*control_values), *refresh_choices(),
                    _note_box(services))

        submit_button.click(
            on_submit, [upload, *browse.controls],
            [status, result, browse.board_table, *browse.filters, *followers, note],
            api_visibility="private")

        # The endpoint `speedbench submit` calls: one file in, {"status", "entry_id", "message"} out.
        api_upload = gr.File(visible=False, type="filepath")
        api_trigger = gr.Button(visible=False)
        def api_submit(path, request: gr.Request):
            return handle(path, request).to_dict()

        api_trigger.click(api_submit, api_upload, result, api_name="submit_bundle")


def _about_tab(settings: Settings) -> None:
    with gr.Tab("About", id="about"):
        gr.Markdown(about.ABOUT)
        gr.Markdown(about.promises(settings.limits, settings.budget, compare.MAX_ENTRIES, settings.guard,
                                   settings.uploads_per_hour), elem_id="promises")
        gr.Textbox(value=about.CITATION, label=about.CITATION_LABEL, lines=6, buttons=["copy"],
                   elem_id="citation")


def build_app(settings: Settings | None = None, store: LeaderboardStore | None = None,
              known_builds: KnownBuilds | None = None, mirror: HubMirror | None = None) -> gr.Blocks:
    settings = settings or Settings()
    services = _prepare(settings, store, known_builds, mirror)
    store = services.store
    cache = populate.BoardCache(store)  # built here, at start-up: the first page load reads it as every other
    table, refresh_choices = _board_functions(cache)
    rows, found = cache.rows(), cache.choices()

    with gr.Blocks(title=about.TITLE, fill_width=True, delete_cache=UPLOAD_SWEEP_S) as demo:
        gr.Markdown(f"# {about.TITLE}")
        gr.Markdown(about.INTRODUCTION)
        # plain text: the note quotes a Hub error message
        note = gr.Textbox(value=services.mirror_note(), show_label=False, interactive=False, container=False,
                          elem_id="mirror-note", visible=bool(services.mirror_note()))
        with gr.Tabs():
            browse = _browse_tab(rows, found, table)
            followers = _compare_tab(store, services.admission)
            _submit_tab(settings, services, browse, followers, table, refresh_choices, note)
            _about_tab(settings)

        demo.load(lambda *values: (table(*values), *refresh_choices(), _note_box(services)), browse.controls,
                  [browse.board_table, *browse.filters, *followers, note], api_visibility="private")
    demo.store = store  # for tests and for closing
    demo.admission, demo.sync = services.admission, services.sync
    # every file in the upload folder past its age that no submission uses (sbspace/guard.py)
    demo.sweeper = UploadSweeper(submission.upload_cache_dir(), settings.guard.upload_max_age_s,
                                 submission.files_in_use).start()
    close = demo.close
    demo.close = lambda *args, **kwargs: (demo.sweeper.close(), close(*args, **kwargs))[1]
    return demo


def launch_options(settings: Settings) -> dict:
    """What ``launch`` needs beyond the address: the upload cap, and the request guard (a cap on
    requests in flight, a deadline on each request body; sbspace/guard.py)."""
    from starlette.middleware import Middleware

    guard = Middleware(RequestGuard, max_in_flight=settings.guard.max_in_flight,
                       body_timeout_s=settings.guard.body_timeout_s, max_body_bytes=settings.guard.max_body_bytes)
    return {"max_file_size": settings.limits.max_archive_bytes, "app_kwargs": {"middleware": [guard]}}


def serve(demo: gr.Blocks, settings: Settings, **launch) -> ConnectionGuard:
    """Launch ``demo`` with the request guard, then watch its server's connections (slow request
    heads, the open-connection cap: sbspace/connections.py, which needs the running server)."""
    # Gradio's per-event limit only bounds threads; what validations may cost is the admission's
    demo.queue(default_concurrency_limit=8).launch(
        server_name=settings.host, server_port=settings.port, prevent_thread_lock=True,
        **launch_options(settings), **launch)
    guard = ConnectionGuard(demo.server, settings.guard).start()
    close = demo.close
    demo.close = lambda *args, **kwargs: (guard.close(), close(*args, **kwargs))[1]
    return guard


def main() -> None:
    settings = Settings()
    if settings.mirror_repo:
        hub_client_with_timeouts()  # a Hub that never answers must not hold the sync thread forever
    demo = build_app(settings)
    serve(demo, settings)
    demo.block_thread()


if __name__ == "__main__":
    main()
