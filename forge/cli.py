"""The ``forge`` command: compile, export, diff and run plan documents without a server.

Exit codes: 0 clean (or warnings only; for ``run``: the run succeeded), 1 the plan has
errors (or the run failed, ran out of budget or was cancelled), 2 the input could not be
read, 3 the run needs a replan, 4 the run waits for a person's approval. No Django
settings are needed. ``forge compile`` prints each diagnostic (with its fix hint; what
reading the file warns of, such as a Mermaid decision whose branches all run, among
them), and for a plan that compiles its impact: scopes, side effects, hosts, MCP
servers, files, commands, approvals, estimates and duration (``--json``: the ``impact``
object of ``POST /api/v1/compile``). ``FORGE_MILESTONE_WARN_STEPS`` (default 50) is the size past
which a plan without milestones draws a warning.

``forge run`` passes the same approval gate as the web: the plan runs only once a person
other than its author approves it (``--approve-as NAME``; ``--author`` names who wrote
the file), and so does every version a planner proposes, unless the policy's
``auto_approve_replans: read_only`` lets a read-only replan continue. A replan that drops
a constraint of the version it replaces (plan drift) also needs ``--accept-drift``, and
one that adds a tool, a permission scope, a side-effect class or a host (an escalation)
``--accept-escalation``. With ``--rules FILE`` (a ``forge.rules/v1`` document) the gate
judges who must approve: ``--approve-as NAME[@team,...]`` may be repeated, every person
named approves, and the run starts only when they satisfy every rule that matches the
plan (and each waiting step). Every approval given in a name is printed with what it
approves.

Tools: the built-ins, installed Python tools and the MCP servers of ``--config FILE`` (an
``mcpServers`` JSON file, the one the web's ``FORGE_MCP_SERVERS`` names, which is also the
default), plus ``forge run --mcp NAME=COMMAND``. ``http_request`` reaches the hosts of
``FORGE_HTTP_ALLOWED_HOSTS`` and ``--allow-host`` (``compile`` and ``run``), and a step
whose URL names another is the compile error ``host_not_allowed``. A server that does not
answer is named on stderr and its tools compile as ``tool_unavailable``.

Models: ``forge run --model openai:MODEL`` runs agent steps (``tools_allowed`` without
``tool``) with an OpenAI-compatible endpoint (``--base-url``, else ``FORGE_MODEL_BASE_URL``,
else OpenAI's), its key read from ``FORGE_MODEL_API_KEY`` or ``OPENAI_API_KEY`` only;
``--model scripted:FILE`` replays prepared replies. ``--planner openai:MODEL`` (or
``llm:MODEL``) replans with the same endpoint, ``--planner scripted:FILE[,FILE...]`` with
prepared versions: the same specs as the web's ``FORGE_PLANNER``
(``forge.planners.config``).

``forge eval SUITE --planner SPEC`` scores a planner (``scripted:ANSWERS``, ``llm:MODEL``
or ``openai:MODEL`` with ``--base-url``) over a suite of goals whose tools answer as the
suite scripts, under the same compiler, gate and executor (docs/evaluation.md): a table,
or the report with ``--json``; ``--report-to URL`` also stores the report on a Forge site
as the user of ``FORGE_API_TOKEN``. Exit 0 when no score failed, 1 when one did, 2 for a
suite, answers file or planner that cannot be read, 5 when the upload failed.

``forge mcp --url URL`` talks to a Forge server too: it serves the
MCP tools an agent uses to submit plans and follow their runs over stdio, as the user of
the API token in ``FORGE_API_TOKEN`` (``forge.mcp_server``, docs/agents.md); exit 2 when
the URL or the token is missing. ``forge gateway --url URL`` likewise serves the gateway
(``forge.gateway``): the site's upstream MCP tools, every call checked by the site.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from forge.errors import ForgeError
from forge.plan.limits import DEFAULT_LIMITS, ImportLimits
from forge.runners.modes import SANDBOX_MODES, SandboxMode

# Each command imports what it needs when it runs (``forge --help`` and ``forge compile``
# start in a fraction of the time ``run``'s agents, models and HTTP client take to import;
# tests/unit/cli/test_startup_imports.py holds them to that).
if TYPE_CHECKING:
    from forge.compiler import CompileResult
    from forge.models import ModelPort
    from forge.models.config import Endpoint
    from forge.plan import ImportedPlan, PlanDocument
    from forge.planners import PlannerPort
    from forge.rules import Approver, RuleSet
    from forge.runtime import ToolExecutor
    from forge.runtime.agent_port import AgentPort
    from forge.runtime.local import ApprovalNotice, LocalRunResult
    from forge.toolbox import McpServerConfig, Toolbox
    from forge.tools import Policy, ToolSpec

# forge.planners.config.PLANNER_SPECS, for --planner's help; importing that module loads
# the models and their HTTP client, so a test keeps this copy equal to it instead.
PLANNER_SPECS = "openai:MODEL (llm:MODEL) or scripted:FILE[,FILE...]"

EXIT_OK, EXIT_ERRORS, EXIT_UNREADABLE, EXIT_NEEDS_REPLAN, EXIT_AWAITING_APPROVAL = 0, 1, 2, 3, 4
EXIT_UPLOAD_FAILED = 5
_SEVERITIES = ("error", "warning", "info")


class InputError(Exception):
    """The input could not be read: exit 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except InputError as exc:
        print(f"forge: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE


def _parser() -> argparse.ArgumentParser:
    summary = __doc__.split("\n")[0].replace("``", "")  # reST's quotes are not for a terminal
    parser = argparse.ArgumentParser(prog="forge", description=summary)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    compile_ = commands.add_parser("compile", help="compile a plan and print its diagnostics")
    _add_input_arguments(compile_)
    compile_.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON, the object POST /api/v1/compile answers "
        "(indented on a terminal, on one line otherwise)",
    )
    compile_.add_argument("--policy", type=Path, help="policy file (YAML or JSON)")
    _add_config_argument(compile_)
    _add_allow_host_argument(compile_)
    compile_.set_defaults(handler=_compile)

    export = commands.add_parser("export", help="convert a plan to another format")
    _add_input_arguments(export)
    _add_config_argument(export, "checked, not started: export needs no tools")
    export.add_argument(
        "--to",
        required=True,
        choices=["mermaid", "dot", "json", "yaml"],
        help="the format to print (dot: Graphviz)",
    )
    export.set_defaults(handler=_export)

    diff = commands.add_parser(
        "diff",
        help="say what changed between two versions of a plan, as the review card does",
        description="What changed from OLD to FILE: plan fields, then steps added, removed "
        "and changed (each field down to the part that changed), then dependencies.",
    )
    diff.add_argument("old", help="the earlier version (JSON, YAML or Mermaid)")
    _add_input_arguments(diff)
    diff.add_argument(
        "--json",
        action="store_true",
        help="print the diff as GET /api/v1/plans/{id}/diff answers it (without plan, from, to)",
    )
    diff.set_defaults(handler=_diff)

    run = commands.add_parser("run", help="run a plan locally with the real executor")
    _add_input_arguments(run)
    run.add_argument("--policy", type=Path, help="policy file (YAML or JSON)")
    _add_config_argument(run)
    run.add_argument(
        "--workspace",
        type=Path,
        help="run directory, kept (default: a new temporary directory, removed at the end)",
    )
    run.add_argument(
        "--keep-workspace",
        action="store_true",
        help="keep the temporary workspace when the run ends (to read what the steps wrote)",
    )
    run.add_argument(
        "--planner",
        help=f"who replans: {PLANNER_SPECS} (a script's files are the versions replans return)",
    )
    run.add_argument(
        "--model", help="runs agent steps: openai:MODEL or scripted:FILE (replies, JSON or YAML)"
    )
    run.add_argument("--base-url", help="OpenAI-compatible endpoint of --model and --planner")
    _add_model_timeout(run)
    run.add_argument(
        "--price-per-1k-tokens",
        type=float,
        metavar="COST",
        help="price of 1,000 tokens of an openai: model: the cost counted against max_cost",
    )
    run.add_argument("--max-turns", type=int, default=8, help="model turns per agent step")
    run.add_argument(
        "--approve-as",
        type=_approver,
        action="append",
        default=[],
        metavar="NAME[@team,...]",
        help="approve the plan, the planner's versions and waiting steps as NAME, a member "
        "of those teams (repeat for several people; each approval printed)",
    )
    run.add_argument(
        "--rules",
        metavar="FILE",
        help="approval rules (forge.rules/v1, JSON or YAML): who must approve what",
    )
    run.add_argument(
        "--accept-escalation",
        action="store_true",
        help="with --approve-as: also approve replans that add a tool, a permission scope, "
        "a side-effect class or a host",
    )
    run.add_argument(
        "--author",
        type=_person,
        default="the file's author",
        metavar="NAME",
        help="who wrote the plan file (cannot also approve it)",
    )
    run.add_argument(
        "--accept-drift",
        action="store_true",
        help="with --approve-as: also approve replans that drop a constraint (plan drift)",
    )
    _add_allow_host_argument(run)
    run.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        default="bwrap",
        help="how shell steps are confined: bwrap (without bubblewrap they fail) or rlimits "
        "(resource limits only, an explicit opt-in)",
    )
    run.add_argument(
        "--mcp",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="start an MCP server over stdio and offer its tools (repeatable)",
    )
    run.set_defaults(handler=_run)

    evaluate = commands.add_parser(
        "eval",
        help="score a planner over a suite of goals with scripted tool outcomes",
        description="Run a planner over each case of an evaluation suite (forge.eval/v1) "
        "with the tools answering as the case scripts, and score plan validity, execution "
        "fidelity, replan quality, end-to-end success and cost/latency (docs/evaluation.md).",
    )
    evaluate.add_argument("suite", help="evaluation suite (YAML or JSON)")
    evaluate.add_argument(
        "--planner", required=True, help="scripted:ANSWERS (a file), llm:MODEL or openai:MODEL"
    )
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--case", action="append", default=[], metavar="ID",
                          help="run only this case (repeatable)")  # fmt: skip
    evaluate.add_argument("--base-url", help="OpenAI-compatible endpoint of llm: planners")
    _add_model_timeout(evaluate)
    evaluate.add_argument(
        "--price-per-1k-tokens",
        type=float,
        metavar="COST",
        help="price of 1,000 tokens of an llm: or openai: planner, for the report's costs",
    )
    evaluate.add_argument(
        "--report-to",
        metavar="URL",
        help="also store the report on this Forge site (token: FORGE_API_TOKEN)",
    )
    evaluate.set_defaults(handler=_eval)

    mcp = commands.add_parser(
        "mcp",
        help="serve Forge's MCP tools over stdio to an agent (token: FORGE_API_TOKEN)",
        description="Serve Forge's MCP tools over stdio: an agent compiles and submits "
        "plans, waits for a person's approval, starts runs and reads their events, as the "
        "Forge user of the API token in FORGE_API_TOKEN (never a flag). docs/agents.md.",
    )
    _add_site_url(mcp)
    mcp.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                     help="for each request to Forge")  # fmt: skip
    mcp.set_defaults(handler=_mcp)

    gateway = commands.add_parser(
        "gateway",
        help="serve Forge's gateway over stdio to an agent (token: FORGE_API_TOKEN)",
        description="Serve Forge's gateway over stdio: the tools of the MCP servers the "
        "Forge site is configured with (FORGE_MCP_SERVERS), each call checked by Forge and "
        "forwarded once; a call naming a run and step in its _meta (forge/run, forge/step) "
        'executes that step of a run started with executor "agent". As the Forge user '
        "of the API token in FORGE_API_TOKEN (never a flag). docs/agents.md.",
    )
    _add_site_url(gateway)
    gateway.add_argument("--timeout", type=float, default=330.0, metavar="SECONDS",
                         help="for each request to Forge (a forwarded call waits for "
                         "its tool)")  # fmt: skip
    gateway.set_defaults(handler=_gateway)
    return parser


def _add_site_url(command: argparse.ArgumentParser) -> None:
    """``--url``, for the commands that speak to a Forge site as an agent's stdio server."""
    command.add_argument(
        "--url",
        default=os.environ.get("FORGE_URL"),
        help="Forge's site URL, e.g. https://forge.example.com (default: FORGE_URL)",
    )


def _add_model_timeout(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--model-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long one model request may take (default 60)",
    )


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="plan document (JSON, YAML or Mermaid); - reads stdin")
    parser.add_argument("--format", choices=["json", "yaml", "mermaid"], help="input format")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_LIMITS.max_bytes,
        help=f"largest plan document read, in bytes (default {DEFAULT_LIMITS.max_bytes:,})",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=DEFAULT_LIMITS.max_steps,
        help="most steps; also sets the most nodes parsing may read (50 per step, 10,000 at least)",
    )


def _limits(args: argparse.Namespace) -> ImportLimits:
    """The limits of ``--max-bytes`` and ``--max-steps``, each refusal naming its flag."""
    return ImportLimits(
        max_bytes=args.max_bytes,
        max_steps=args.max_steps,
        bytes_setting="--max-bytes",
        steps_setting="--max-steps",
    )


def _add_config_argument(parser: argparse.ArgumentParser, note: str = "") -> None:
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        default=os.environ.get("FORGE_MCP_SERVERS") or None,
        help='MCP servers ({"mcpServers": ...} JSON; default: $FORGE_MCP_SERVERS)'
        + (f"; {note}" if note else ""),
    )


def _mcp_servers(args: argparse.Namespace) -> list[McpServerConfig]:
    """The servers of ``--config``, then of ``--mcp`` (``run`` only)."""
    from forge.runners.mcp_config import McpConfigError, McpServerConfig, load_mcp_servers

    try:
        servers = list(load_mcp_servers(args.config)) if args.config else []
        servers += [McpServerConfig.parse(text) for text in getattr(args, "mcp", ())]
    except McpConfigError as exc:
        raise InputError(f"{exc} [{exc.code}]") from None
    return servers


def _toolbox(
    args: argparse.Namespace, allowed_hosts: Sequence[str] = (), sandbox: SandboxMode = "bwrap"
) -> Toolbox:
    """The toolbox of ``args``, its servers discovered; unavailable ones named on stderr."""
    from forge.toolbox import McpConfigError, build_toolbox

    servers = _mcp_servers(args)
    try:
        toolbox = build_toolbox(mcp_servers=servers, allowed_hosts=allowed_hosts, sandbox=sandbox)
    except McpConfigError as exc:
        raise InputError(f"{exc} [{exc.code}]") from None
    try:
        for server in toolbox.servers():
            if not server.available:
                print(f"forge: warning: MCP server {server.name!r} is not available: "
                      f"{server.error}", file=sys.stderr)  # fmt: skip
    except BaseException:
        toolbox.close()
        raise
    return toolbox


def read_document(args: argparse.Namespace) -> PlanDocument:
    """The plan of ``args.file``; what reading it warns of (a Mermaid decision whose
    branches all run) is printed on stderr."""
    imported = read_imported(args)
    for warning in imported.warnings:
        print(f"forge: {args.file}: warning[{warning.code}] {warning.message}", file=sys.stderr)
        if warning.hint:
            print(f"forge: {args.file}:   fix: {warning.hint}", file=sys.stderr)
    return imported.document


def read_imported(args: argparse.Namespace) -> ImportedPlan:
    """The plan of ``args.file`` with what reading it warns of (``import_plan``)."""
    from forge.gcpause import paused_gc
    from forge.plan import detect_format, import_plan

    limits = _limits(args)
    try:
        if args.file == "-":
            source = sys.stdin.buffer.read(limits.max_bytes + 1)
            filename = None
        else:
            path = Path(args.file)
            with path.open("rb") as stream:
                source = _read_within(stream, limits.max_bytes)
            filename = path.name
    except OSError as exc:
        raise InputError(f"cannot read {args.file}: {exc.strerror or exc}") from None
    try:
        fmt = args.format or detect_format(source, filename)
        # A document is acyclic: the collector would only walk it (forge.gcpause). Paused
        # here, in the command, never by the library, which threaded servers call too.
        with paused_gc():
            return import_plan(source, fmt, limits)
    except ForgeError as exc:
        raise InputError(f"{args.file}: {exc} [{exc.code}]") from None


def _read_within(stream: BinaryIO, max_bytes: int) -> bytes:
    """The file's bytes, or its first ``max_bytes`` and one more: never the whole of a
    larger file. A buffer the size of the limit is made only when the file's size is
    unknown or over it: reading a 5 MB plan into one of 10 MB took five times as long."""
    size = os.fstat(stream.fileno()).st_size
    if not 0 < size <= max_bytes:  # empty as stat sees it (a pipe, /proc), or too large
        return stream.read(max_bytes + 1)
    source = stream.read(size + 1)
    if len(source) > size:  # it grew since: the rest, up to the byte past the limit
        source += stream.read(max_bytes + 1 - len(source))
    return source


def _policy(path: Path | None) -> Policy:
    from forge.tools import DEFAULT_POLICY, Policy, PolicyError

    if path is None:
        return DEFAULT_POLICY
    try:
        return Policy.from_file(path)
    except PolicyError as exc:
        raise InputError(str(exc)) from None


def _compile(args: argparse.Namespace) -> int:
    from forge.compiler import GraphCompiler
    from forge.gcpause import paused_gc
    from forge.tools import PolicyEngine

    # Reading, compiling and writing make acyclic data, hundreds of thousands of objects
    # for a large plan: the cyclic collector would only walk them (forge.gcpause).
    with paused_gc():
        imported = read_imported(args)
        document = imported.document
        policy = PolicyEngine(_policy(args.policy))
        # the catalogue `run` and the web compile against: built-ins, Python and MCP tools,
        # http_request reaching the same hosts (a call to another is host_not_allowed)
        with _toolbox(args, allowed_hosts=_allowed_hosts(args)) as toolbox:
            compiler = GraphCompiler(
                toolbox.registry, policy, milestone_warn_steps=_milestone_warn_steps()
            )
            # what reading the file warned of, among the diagnostics
            result = compiler.compile(document).noting(imported.warnings)
        if args.json:
            # Indented for a person at a terminal; on one line for a script or a file:
            # 40% fewer bytes, and the 10,000-step result is written in a third of the
            # time.
            _print_utf8(result.to_json_bytes(indent=sys.stdout.isatty()))
        else:
            _print_diagnostics(args.file, result)
            if result.impact is not None:
                print(f"{args.file}: impact")
                for line in result.impact.lines():
                    print(f"  {line}")
        ok = result.ok
        # Freed while the collector rests: back on, it would walk them all once more.
        del document, imported, result
    return EXIT_OK if ok else EXIT_ERRORS


def _print_utf8(text: bytes) -> None:
    """``print(text.decode())``, writing the bytes as they are where stdout is UTF-8
    over a byte stream: a 10,000-step result is 5 MB, which decoding and encoding again
    took a tenth of ``forge compile --json``."""
    stdout = sys.stdout
    buffer = getattr(stdout, "buffer", None)
    if buffer is None or (stdout.encoding or "").lower().replace("-", "") != "utf8":
        print(text.decode(errors="surrogatepass"))
        return
    stdout.flush()
    buffer.write(text)
    buffer.write(b"\n")
    buffer.flush()


def _milestone_warn_steps() -> int:
    """``FORGE_MILESTONE_WARN_STEPS``: a plan of more steps without milestones draws a
    warning (default 50; 0: never), as on the web."""
    from forge.compiler.milestones import DEFAULT_WARN_STEPS

    value = os.environ.get("FORGE_MILESTONE_WARN_STEPS", "").strip()
    if not value:
        return DEFAULT_WARN_STEPS
    if not value.isdigit():
        raise InputError(f"FORGE_MILESTONE_WARN_STEPS must be a whole number >= 0, not {value!r}")
    return int(value)


def _print_diagnostics(name: str, result: CompileResult) -> None:
    for diagnostic in result.diagnostics:
        print(f"{name}: {diagnostic.severity}[{diagnostic.code}] {diagnostic.message}")
        if diagnostic.hint:
            print(f"{name}:   fix: {diagnostic.hint}")
    counts = dict.fromkeys(_SEVERITIES, 0)
    for diagnostic in result.diagnostics:
        counts[diagnostic.severity] += 1
    summary = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items() if n)
    verdict = "compiles" if result.ok else "does not compile"
    print(f"{name}: {verdict}" + (f" ({summary})" if summary else ""))


def _mcp(args: argparse.Namespace) -> int:
    from forge.client import AsyncForgeClient  # the MCP server's imports only when serving
    from forge.mcp_server import stdio

    if not args.url:
        raise InputError("give Forge's URL: --url URL, or set FORGE_URL")
    try:
        token = stdio.token_from_environment()
        client = AsyncForgeClient(args.url, token, timeout_s=args.timeout)
    except ValueError as exc:  # no token, a malformed one, or not an http(s) URL
        raise InputError(str(exc)) from None
    stdio.serve(client)
    return EXIT_OK


def _gateway(args: argparse.Namespace) -> int:
    from forge.client import AsyncForgeClient  # the MCP SDK's imports only when serving
    from forge.gateway import stdio as gateway_stdio
    from forge.mcp_server.stdio import token_from_environment

    if not args.url:
        raise InputError("give Forge's URL: --url URL, or set FORGE_URL")
    try:
        token = token_from_environment()
        client = AsyncForgeClient(args.url, token, timeout_s=args.timeout)
    except ValueError as exc:  # no token, a malformed one, or not an http(s) URL
        raise InputError(str(exc)) from None
    gateway_stdio.serve(client)
    return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from forge import evaluation  # loaded by this command only

    try:
        suite = evaluation.read_suite(Path(args.suite))
    except evaluation.SuiteError as exc:
        raise InputError(f"{args.suite}: {exc} [{exc.code}]") from None
    unknown = sorted(set(args.case) - {case.id for case in suite.cases})
    if unknown:
        raise InputError(f"{args.suite}: no case {', '.join(map(repr, unknown))}")
    upload = _uploader(args.report_to) if args.report_to else None
    try:  # the answers file is checked against the whole suite
        planner = evaluation.planner_from_spec(args.planner, suite, _endpoint(args))
    except evaluation.PlannerSpecError as exc:
        raise InputError(f"{exc} [{exc.code}]") from None
    if args.case:
        suite = dataclasses.replace(suite, cases=tuple(c for c in suite.cases if c.id in args.case))
    try:
        report = evaluation.evaluate(suite, planner.name, planner.factory)
    finally:
        for model in planner.models:
            close = getattr(model, "close", None)
            if close is not None:
                close()
    if args.json:
        print(json.dumps(report.to_data(), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(report.render_text())
    if upload is not None and not upload(report.to_data()):
        return EXIT_UPLOAD_FAILED
    return EXIT_OK if report.all_passed else EXIT_ERRORS


def _uploader(url: str) -> Callable[[dict[str, object]], bool]:
    """Stores a report on the site at ``url``; checked before anything runs."""
    from forge.client import ForgeApiError, ForgeClient

    token = os.environ.get("FORGE_API_TOKEN", "").strip()
    if not token:
        raise InputError(
            "--report-to needs an API token in FORGE_API_TOKEN (an author's or an "
            "operator's: manage.py forge_user NAME --role author --token)"
        )
    try:
        client = ForgeClient(url, token)
    except ValueError as exc:
        raise InputError(f"--report-to: {exc}") from None

    def upload(report: dict[str, object]) -> bool:
        with client:
            try:
                stored = client.upload_evaluation(report)
            except ForgeApiError as exc:
                print(f"forge: the report was not stored: {exc} [{exc.code}]", file=sys.stderr)
                return False
        print(f"report stored: {stored.url or stored.id}", file=sys.stderr)
        return True

    return upload


def _run(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    document = read_document(args)
    if args.sandbox == "rlimits":
        print("forge: warning: --sandbox rlimits: shell steps run with resource limits only, "
              "without bubblewrap", file=sys.stderr)  # fmt: skip
    if args.workspace is not None:
        args.workspace.mkdir(parents=True, exist_ok=True)
        return _run_in(args, document, args.workspace, "")
    workspace = Path(tempfile.mkdtemp(prefix="forge-run-"))
    if args.keep_workspace:
        return _run_in(args, document, workspace, "")
    try:
        return _run_in(
            args, document, workspace, " (removed when the run ends; --keep-workspace keeps it)"
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def _run_in(args: argparse.Namespace, document: PlanDocument, workspace: Path, note: str) -> int:
    import contextlib
    import secrets

    from forge.compiler import GraphCompiler
    from forge.progress import ProgressPrinter
    from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
    from forge.runtime.local import LocalRun
    from forge.tools import PolicyEngine

    policy = PolicyEngine(_policy(args.policy))
    with (
        _toolbox(args, allowed_hosts=_allowed_hosts(args), sandbox=args.sandbox) as toolbox,
        contextlib.ExitStack() as models,
    ):
        tools = toolbox.snapshot()  # one catalogue for the whole run
        planner = _planner(args.planner, args, tools.registry) if args.planner else None
        model = _model(args.model, args) if args.model else None
        for used in (model, getattr(planner, "model", None)):
            close = getattr(used, "close", None)  # an HTTP model holds a connection pool
            if close is not None:
                models.callback(close)
        compiler = GraphCompiler(
            tools.registry, policy, milestone_warn_steps=_milestone_warn_steps()
        )
        executor = ToolExecutor(
            tools.registry,
            policy,
            InMemoryRecordStore(),
            tools.runners,
            approvals=ApprovalSigner(secrets.token_bytes(32)),
        )
        progress = ProgressPrinter(sys.stdout, len(document.steps), live=sys.stdout.isatty())
        print(f"workspace: {workspace}{note}")
        local = LocalRun(
            compiler,
            executor,
            workspace,
            planner=planner,
            agent=None if model is None else _agent(model, executor, args.max_turns),
            approvers=tuple(args.approve_as),
            author=args.author,
            accept_drift=args.accept_drift,
            accept_escalation=args.accept_escalation,
            rules=_rules(args.rules),
            on_event=progress,
            on_approval=_print_approval,
        )
        result = local.run(document)
        progress.finish()
    return _report(args.file, result)


def _agent(model: ModelPort, executor: ToolExecutor, max_turns: int) -> AgentPort:
    """Runs the plan's agent steps with ``model``; imported only when a model is given,
    so that a plan without agent steps starts without the agents' imports."""
    from forge.agents import AgentRunner

    return AgentRunner(model, executor, max_turns=max_turns)


def _approver(text: str) -> Approver:
    """``--approve-as NAME[@team,...]``: a person, and the teams they approve as."""
    from forge.rules import Approver

    name, _, teams = text.partition("@")
    listed = tuple(team.strip() for team in teams.split(",") if team.strip()) if teams else ()
    if teams and not listed:
        raise argparse.ArgumentTypeError(f"{text!r}: name the teams after @, or leave @ out")
    return Approver(_person(name), listed)


def _rules(path: str | None) -> RuleSet:
    """The rules of ``--rules FILE``, or four eyes alone; a bad file is refused with its
    line and field (exit 2)."""
    from forge.rules import FOUR_EYES, RulesInvalid

    if path is None:
        return FOUR_EYES
    from forge.rules.reader import read_rules  # YAML: only when there is a file to read

    try:
        return read_rules(Path(path).read_bytes())
    except OSError as exc:
        raise InputError(f"--rules {path}: {exc.strerror or exc}") from None
    except RulesInvalid as exc:
        raise InputError(f"--rules {path}: {exc} [{exc.code}]") from None


def _person(text: str) -> str:
    """A name given to --approve-as or --author: without surrounding spaces, never empty
    (the gate compares names regardless of case: ``forge.runtime.gate.same_person``)."""
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError("give a person's name, not an empty one")
    return name


def _endpoint(args: argparse.Namespace) -> Endpoint:
    from forge.models.config import Endpoint

    return Endpoint.from_env(
        os.environ,
        base_url=args.base_url,
        timeout_s=args.model_timeout,
        price_per_1k_tokens=args.price_per_1k_tokens,
    )


def _model(spec: str, args: argparse.Namespace) -> ModelPort:
    from forge.models import model_from_spec

    try:
        return model_from_spec(spec, _endpoint(args))
    except (ForgeError, ValueError) as exc:
        raise InputError(f"--model {spec}: {exc}") from None


def _planner(spec: str, args: argparse.Namespace, tools: Iterable[ToolSpec]) -> PlannerPort:
    from forge.planners.config import planner_from_spec

    limits = _limits(args)
    try:
        return planner_from_spec(spec, _endpoint(args), tools=tools, limits=limits)
    except ForgeError as exc:
        raise InputError(f"--planner {spec}: {exc} [{exc.code}]") from None


def _print_approval(notice: ApprovalNotice) -> None:
    print(f"approved {notice.subject} as {notice.approver}:")
    for line in notice.details.splitlines():
        print(f"    {line}")


def _report(name: str, result: LocalRunResult) -> int:
    from forge.compiler import CompileResult

    if result.status == "not_compiled":
        _print_diagnostics(name, CompileResult(result.diagnostics, None))
        return EXIT_ERRORS
    if result.waiting_for == "version":
        print(f"waiting for a person: {result.stop_reason}")
        return EXIT_AWAITING_APPROVAL
    state = result.state
    assert state is not None
    if result.status == "needs_replan":
        failed = state.steps[state.failed_step] if state.failed_step else None
        print(
            f"step {state.failed_step} {failed.status if failed else ''}: "
            f"{failed.error if failed else ''}"
        )
        print(f"reset: {', '.join(state.reset) or '-'}")
        print(f"preserved: {', '.join(state.preserved) or '-'}")
        if result.stop_reason:
            print(f"replan stopped: {result.stop_reason}")
        return EXIT_NEEDS_REPLAN
    if result.status == "awaiting_approval":
        # The run's own words: which steps or milestones wait, and who can act.
        why = result.stop_reason or "run again with --approve-as NAME"
        print(f"waiting for a person: {state.blocked_reason} ({why})")
        for step_id in state.with_status("awaiting_approval"):
            preview = result.preview_of(step_id)
            if preview is not None:
                print(f"{step_id} will: {preview['summary']}")
                for line in str(preview["text"]).splitlines():
                    print(f"    {line}")
                refusal = preview.get("refusal")
                if isinstance(refusal, dict):
                    print(f"{step_id} cannot run: {refusal['reason']} [{refusal['code']}]")
                    print(f"{step_id}   fix: {refusal['hint']}")
        return EXIT_AWAITING_APPROVAL
    print(
        f"run {result.status}: {state.used_steps} step(s), {state.used_tokens} tokens, "
        f"cost {state.used_cost:g}, {len(result.versions)} version(s)"
    )
    return EXIT_OK if result.status == "succeeded" else EXIT_ERRORS


def _export(args: argparse.Namespace) -> int:
    from forge.plan import dump_plan

    document = read_document(args)
    _mcp_servers(args)  # the same options work for every command; a bad file is said so
    sys.stdout.write(dump_plan(document, args.to))
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    """Exit 0 whether or not the versions differ (1 means errors here, as for compile)."""
    import json

    from forge.plan import diff_plans
    from forge.plan.diff_text import change_lines

    old = read_document(argparse.Namespace(**{**vars(args), "file": args.old}))
    data = diff_plans(old, read_document(args)).to_data()
    if args.json:
        print(json.dumps(data, indent=2 if sys.stdout.isatty() else None, ensure_ascii=False))
        return EXIT_OK
    lines = change_lines(data)
    if not lines:
        print(f"{args.old} and {args.file}: the same plan")
    for line in lines:
        sign = {"added": "+", "removed": "-"}.get(line["kind"], "~")
        print(f"{sign} {line['title']}{' ' + line['detail'] if line['detail'] else ''}")
        for field in line.get("fields", []):
            print(f"    {field}")
    return EXIT_OK


def _add_allow_host_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a host http_request may reach, besides FORGE_HTTP_ALLOWED_HOSTS (repeatable; "
        "HOST:PORT for one port)",
    )


def _allowed_hosts(args: argparse.Namespace) -> list[str]:
    """The hosts http_request may reach: ``FORGE_HTTP_ALLOWED_HOSTS`` and ``--allow-host``."""
    return [*_env_list("FORGE_HTTP_ALLOWED_HOSTS"), *args.allow_host]


def _env_list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


if __name__ == "__main__":
    raise SystemExit(main())
