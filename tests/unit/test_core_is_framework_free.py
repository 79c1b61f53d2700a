"""The core must run without Django: no module of ``forge`` may import it."""

import ast
import subprocess
import sys
from pathlib import Path

import forge

FORBIDDEN = ("django", "ninja", "channels", "uvicorn", "django_tasks_db", "forge_web")
FORBIDDEN += ("accounts", "audit", "plans", "runs")


def _imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_no_module_of_the_core_imports_django_or_a_web_app():
    offenders = [
        f"{path.relative_to(Path(forge.__file__).parent.parent)} imports {name}"
        for path in Path(forge.__file__).parent.rglob("*.py")
        for name in _imported_modules(path)
        if name.split(".")[0] in FORBIDDEN
    ]

    assert offenders == []


def test_importing_the_whole_core_loads_no_django_module():
    code = (
        "import pkgutil, importlib, sys, forge\n"
        "for m in pkgutil.walk_packages(forge.__path__, 'forge.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'django' or n.startswith('django.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"
