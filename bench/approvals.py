"""How many questions a person is asked (issue 48, item 6): one agent session replayed
under `--confirm write`, under `--confirm risky`, and under `--confirm risky
--stage-commands` (its commands under bubblewrap against a view, asked about only when
what they changed meets a rule).

The session is 100 calls of a real coding task on a copy of the Django 5.2.19 corpus, in
the order an agent makes them: find where slugs are made, read and outline the module,
add `slugify_unicode` to django/utils/text.py, use it in two places, write its tests,
run them, bump a test dependency, add a CI step, clear a generated folder, undo one
mistaken edit. Each run uses a fresh copy and a 2025-11-25 client that approves every
elicitation, counting them; nothing else differs.

    python bench/approvals.py [--json bench/results/approvals.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult

from agent_workspace_mcp import Settings, create_server
from search import ensure_corpus  # bench/search.py

HERE = Path(__file__).resolve().parent
TEXT = "django/utils/text.py"
IMPORT = "from django.utils.text import slugify as _slugify"
TESTS = """from django.test import SimpleTestCase
from django.utils.slugs import slugify_unicode


class Tests(SimpleTestCase):
    def test_unicode(self):
        self.assertEqual(slugify_unicode("Unicode ok"), "unicode-ok")
"""
HELPER = '''

def slugify_unicode(value):
    """slugify() that keeps non-ASCII letters."""
    return slugify(value, allow_unicode=True)
'''


def session() -> list[tuple[str, dict]]:
    """The agent's 100 calls, in order."""
    calls: list[tuple[str, dict]] = [
        ("workspace_list", {}),
        ("list_files", {"path": "django/utils"}),
        ("grep", {"pattern": r"def slugify", "include": "**/*.py"}),
        ("find_symbol", {"name": "slugify"}),
        ("outline", {"path": TEXT}),
        ("read_symbol", {"name": "slugify", "path": TEXT}),
        ("find_references", {"name": "slugify", "maxResults": 50}),
        ("read_file", {"path": TEXT, "offset": 1, "limit": 60}),
        ("grep", {"pattern": "allow_unicode", "maxResults": 50}),
        ("read_file", {"path": "django/template/defaultfilters.py", "offset": 1, "limit": 80}),
        ("git_status", {}),
    ]
    # Explore: the modules around the change, as an agent reads before it writes.
    for path in (
        "django/utils/html.py",
        "django/utils/encoding.py",
        "django/utils/functional.py",
        "django/utils/safestring.py",
        "django/contrib/admin/utils.py",
        "django/db/models/fields/__init__.py",
    ):
        calls.append(("outline", {"path": path}))
        calls.append(("read_file", {"path": path, "offset": 1, "limit": 40}))
    for name in ("SlugField", "get_text_list", "normalize_newlines", "capfirst", "Truncator"):
        calls.append(("find_symbol", {"name": name}))
        calls.append(("grep", {"pattern": name, "maxResults": 20}))
    # The change.
    calls += [
        ("read_file", {"path": TEXT, "offset": 440, "limit": 40}),
        (
            "write_file",
            {
                "path": "django/utils/slugs.py",
                "content": '"""Slug helpers."""\nfrom django.utils.text import slugify\n' + HELPER,
            },
        ),
        (
            "edit_file",
            {
                "path": "django/utils/slugs.py",
                "oldString": "keeps non-ASCII letters",
                "newString": "keeps letters of every script",
            },
        ),
        ("read_file", {"path": "django/utils/slugs.py"}),
        (
            "edit_file",
            {
                "path": "django/template/defaultfilters.py",
                "oldString": IMPORT,
                "newString": IMPORT + "\nfrom django.utils.slugs import slugify_unicode  # noqa",
            },
        ),
        ("read_file", {"path": "django/template/defaultfilters.py", "offset": 1, "limit": 40}),
        ("make_directory", {"path": "tests/utils_slugs"}),
        ("write_file", {"path": "tests/utils_slugs/__init__.py", "content": ""}),
        ("write_file", {"path": "tests/utils_slugs/tests.py", "content": TESTS}),
        ("run_command", {"command": ["python3", "-c", "print('ran tests: 1 passed')"]}),
        (
            "edit_file",
            {
                "path": "tests/utils_slugs/tests.py",
                "oldString": '"unicode-ok"',
                "newString": '"unicode-ok"  # NFKC',
            },
        ),
        ("run_command", {"command": ["python3", "-c", "print('ran tests: 1 passed')"]}),
        ("git_diff", {}),
        ("review_changes", {}),
        # Housekeeping an agent does on the way: a test dependency, a CI step, a
        # generated folder, a mistaken edit undone.
        (
            "write_file",
            {"path": "tests/requirements/py3.txt", "content": "unicode-slugify==0.1.5\n"},
        ),
        ("make_directory", {"path": ".github/workflows"}),
        ("write_file", {"path": ".github/workflows/slugs.yml", "content": "on: push\njobs: {}\n"}),
        ("make_directory", {"path": "build/gen"}),
    ]
    calls += [
        ("write_file", {"path": f"build/gen/f{i}.txt", "content": f"{i}\n"}) for i in range(4)
    ]
    calls += [
        ("delete_path", {"path": "build", "recursive": True}),
        (
            "edit_file",
            {
                "path": "django/utils/slugs.py",
                "oldString": '"""Slug helpers."""',
                "newString": '"""Slug helpers (draft)."""',
            },
        ),
        ("undo", {}),
        ("read_file", {"path": "django/utils/slugs.py"}),
        ("work_log", {}),
    ]
    while len(calls) < 100:  # the agent re-reads what it changed before it reports
        for path in (TEXT, "django/utils/slugs.py", "tests/utils_slugs/tests.py"):
            calls.append(("read_file", {"path": path, "offset": 1, "limit": 30}))
    return calls[:100]


async def replay(corpus: Path, confirm: str, staged: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(corpus, root, symlinks=True)
        git = ["git", "-c", "user.email=b@b", "-c", "user.name=b", "-C", str(root)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "corpus"], check=True)
        asked: list[str] = []

        async def approve(message, response_type, params, context):
            asked.append(message.split("\n", 1)[0])
            return ElicitResult(action="accept", content={"approve": True})

        settings = Settings(
            root=str(root),
            audit=False,
            shell_mode="allowlist",
            shell_allow=("python3",),
            sandbox="bwrap" if staged else "none",
            confirm=(confirm,),
            confirm_via=("client",),
            stage_commands=staged,
        )
        failed = []
        started = time.perf_counter()
        async with Client(create_server(settings), elicitation_handler=approve, mode="legacy") as c:
            for tool, args in session():
                result = await c.call_tool(tool, args, raise_on_error=False)
                if result.is_error:
                    failed.append(f"{tool}: {result.content[0].text[:120]}")
        return {
            "confirm": confirm + (" --stage-commands" if staged else ""),
            "calls": len(session()),
            "asked": len(asked),
            "failed": failed,
            "seconds": round(time.perf_counter() - started, 1),
            "rules": sorted({_rule(a) for a in asked}),
        }


def _rule(message: str) -> str:
    """What asked, from the prompt: `write`, or the risk rule (`ci`)."""
    found = re.search(r"\(--confirm (\w+)(?: \(([\w-]+))?", message)
    return "?" if found is None else found.group(2) or found.group(1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=str(HERE / "results" / "approvals.json"))
    args = parser.parse_args()
    corpus, _ = ensure_corpus()
    rows = [asyncio.run(replay(corpus, confirm)) for confirm in ("write", "risky")]
    rows.append(asyncio.run(replay(corpus, "risky", staged=True)))
    print(f"{'policy':33} {'calls':>6} {'asked':>6}  rules that asked")
    for row in rows:
        rules = ", ".join(row["rules"])
        print(f"--confirm {row['confirm']:23} {row['calls']:6} {row['asked']:6}  {rules}")
        for line in row["failed"]:
            print(f"  failed: {line}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"benchmark": "approvals", "cpus": os.cpu_count(), "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
