"""How long the plan editor takes to draw and lay out plans of 100, 1,000 and 3,000 steps,
in headless Chromium, through the real page: Django serves it from a throwaway SQLite
database, the browser logs in and opens the editor on each plan.

The plans are ``bench.compile.build_plan``'s (about two dependencies per step, spanning
anywhere back in the plan). Per size, the median of a few page loads of:

- drawn: from navigation start to the graph drawn and laid out (``forge:graph-drawn``),
  then one more animation frame, i.e. on screen;
- ready: to ``forge:editor-ready`` (also compiled on the server and the tool catalogue in);
- layout: the layout computation alone (dagre up to 150 steps, the layered layout above);
- longest task: the longest main-thread task while loading (PerformanceObserver
  ``longtask``): how long the page could not answer a click;
- edit: adding a step, from the edit to the graph drawn and laid out again;
- frame: a zoom, from the call to the next animation frame (panning and zooming feel).

Goals: 1,000 steps interactive (drawn) in under 1.5 s; 3,000 steps never freeze the page,
taken here as no main-thread task over 2 s and a zoom frame under 200 ms. Chromium is
/usr/bin/chromium (or ``chromium`` on the PATH). Run with ``python -m bench.editor``
(``--sizes 100,1000`` to choose, ``--repeat N``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import print_table

DEFAULT_SIZES = (100, 1_000, 3_000)
DRAWN_GOAL_MS = {1_000: 1500.0}
FREEZE_LIMIT_MS = 2000.0
FRAME_LIMIT_MS = 200.0
PASSWORD = "bench-password-0123"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]

# Runs in the page before its own scripts: collect long tasks from the start.
OBSERVE_LONG_TASKS = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
}).observe({ type: "longtask", buffered: true });
"""

MEASURE = """async () => {
  const editor = await window.forge.editor.ready;
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const mark = (name) => performance.getEntriesByName(name)[0].startTime;
  const { computeLayout } = await import("/static/forge/js/graph/layout.js");
  const cy = editor.cy;
  const nodes = cy.nodes("[base]")
    .map((n) => ({ id: n.id(), width: n.width(), height: n.height() }));
  const edges = cy.edges("[base]")
    .map((e) => ({ source: e.source().id(), target: e.target().id() }));
  let started = performance.now();
  computeLayout(nodes, edges);
  const layout = performance.now() - started;
  started = performance.now();
  cy.zoom({ level: cy.zoom() * 1.2, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
  await new Promise((resolve) => requestAnimationFrame(resolve));
  const frame = performance.now() - started;
  const { addStep } = await import("/static/forge/js/model/document.js");
  started = performance.now();
  editor.store.edit((doc) => addStep(doc, { id: "bench_extra", dependsOn: [doc.steps[0].id] }));
  await editor.settled();
  await new Promise((resolve) => requestAnimationFrame(resolve));
  const edit = performance.now() - started;
  return {
    nodes: cy.nodes().length,
    drawn: mark("forge:graph-drawn"),
    ready: mark("forge:editor-ready"),
    layout,
    longest: Math.max(0, ...window.__longTasks),
    edit,
    frame,
  };
}"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--screenshots", type=Path, help="save a screenshot per size here")
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.sizes.split(",")]
    chromium = (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
    )
    if chromium is None:
        print("bench.editor: Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="forge-bench-editor-") as tmp:
        server, plans = _serve(Path(tmp), sizes)
        try:
            rows, ok = _measure(chromium, server, plans, options.repeat, options.screenshots)
        finally:
            server.terminate()
            server.join()
    print_table(
        (
            "steps",
            "drawn ms",
            "ready ms",
            "layout ms",
            "longest task ms",
            "edit ms",
            "frame ms",
            "goal",
        ),
        rows,
    )
    return 0 if ok else 1


def _serve(tmp: Path, sizes: list[int]) -> tuple[Any, dict[int, int]]:
    """A live Django server on a fresh SQLite database holding one plan per size."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's loop shares the thread
    import django

    django.setup()
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command
    from django.test.testcases import LiveServerThread

    from accounts.models import User
    from bench.compile import build_plan
    from plans import services

    call_command("migrate", verbosity=0)
    user = User(username="bench")
    user.set_roles(["author", "approver", "operator"])
    user.set_password(PASSWORD)
    user.save()
    plans = {
        size: services.create_plan(user, f"bench {size}", build_plan(size)).plan_id
        for size in sizes
    }
    server = LiveServerThread("localhost", StaticFilesHandler, port=0)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    if server.error:
        raise server.error
    return server, plans


def _measure(
    chromium: str, server: Any, plans: dict[int, int], repeat: int, screenshots: Path | None
) -> tuple[list[list[object]], bool]:
    from playwright.sync_api import sync_playwright

    base = f"http://localhost:{server.port}"
    rows: list[list[object]] = []
    ok = True
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        context.add_init_script(OBSERVE_LONG_TASKS)
        page = context.new_page()
        page.on("dialog", lambda dialog: dialog.accept())  # leaving an edited plan asks
        page.set_default_timeout(120_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("input[name=username]", "bench")
        page.fill("input[name=password]", PASSWORD)
        page.click("form button[type=submit]")
        page.wait_for_url(f"{base}/")
        for size, plan_id in plans.items():
            samples = []
            for index in range(repeat):
                page.goto(f"{base}/plans/{plan_id}/edit/")
                if screenshots and index == 0:  # as a person first sees it
                    page.wait_for_selector("#editor[data-state=ready]")
                    screenshots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshots / f"editor-{size}.png"))
                samples.append(page.evaluate(MEASURE))
            median = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
            goal = DRAWN_GOAL_MS.get(size)
            verdicts = []
            if goal is not None:
                met = median["drawn"] <= goal
                ok &= met
                verdicts.append(f"drawn <= {goal:.0f}: {'yes' if met else 'NO'}")
            if size >= 3_000:
                met = median["longest"] <= FREEZE_LIMIT_MS and median["frame"] <= FRAME_LIMIT_MS
                ok &= met
                verdicts.append(f"no freeze: {'yes' if met else 'NO'}")
            rows.append(
                [
                    size,
                    f"{median['drawn']:.0f}",
                    f"{median['ready']:.0f}",
                    f"{median['layout']:.0f}",
                    f"{median['longest']:.0f}",
                    f"{median['edit']:.0f}",
                    f"{median['frame']:.0f}",
                    "; ".join(verdicts) or "-",
                ]
            )
        browser.close()
    return rows, ok


if __name__ == "__main__":
    raise SystemExit(main())
