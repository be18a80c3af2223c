"""The operator console in a real browser (issue 31): Debian's Chromium driven by
Playwright for Python (`executable_path`: Playwright's own browser download is not
reachable here). The console runs as the CLI prints it; the agent is a real MCP client
on the same root; the page must show its call live, diff it, undo it, stop a job, and
show planted `<script>` text as text."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client

from agent_workspace_mcp import Settings, create_server
from tests.e2e.browser import CHROMIUM, needs_browser, sync_playwright
from tests.e2e.http_server import start
from tests.helpers import requires
from tests.tools.test_staged_commands import _missing as staging_missing

pytestmark = [pytest.mark.slow, needs_browser]

PLANTED = "<script>window.__planted = 1</script><img src=x onerror='window.__planted=2'>"


class RunningConsole:
    def __init__(self, root: Path, job_dir: Path) -> None:
        env = {**os.environ, "WORKSPACE_MCP_JOB_DIR": str(job_dir)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent_workspace_mcp", "console", str(root), "--no-open"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        line = self.proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/login#token=(\S+)", line)
        assert found, line
        self.login, self.base, self.token = found.group(0), found.group(1), found.group(2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=15)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.md").write_text("first line\n")
    return root


def agent(root: Path, job_dir: Path, *calls: tuple[str, dict], **extra) -> list[str]:
    """The agent's calls, through a real MCP client on a server of the same root."""
    settings = Settings(
        root=str(root),
        shell_mode="allowlist",
        shell_allow=("python3",),
        sandbox="none",
        job_dir=str(job_dir),
        audit=False,
        **extra,
    )

    async def run() -> list[str]:
        async with Client(create_server(settings)) as client:
            answers = []
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments, raise_on_error=False)
                answers.append(result.content[0].text)
            return answers

    # In a thread of its own: Playwright's sync API holds this thread's event loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result(timeout=60)


def test_the_console_shows_diffs_undoes_and_stops_jobs(project: Path, tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    agent(project, job_dir, ("remember", {"text": f"planted {PLANTED}"}))
    console = RunningConsole(project, job_dir)
    shots = tmp_path / "shots"
    shots.mkdir()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(console.login)
            page.wait_for_selector("#live:text('live')", timeout=10_000)

            # A write made now by the agent appears within 2 s, without a reload.
            agent(
                project,
                job_dir,
                ("write_file", {"path": "notes.md", "content": f"first line\n{PLANTED}\n"}),
            )
            row = page.locator("tr.entry", has_text="write_file").first
            row.wait_for(timeout=2_000)
            row.click()
            diff = page.locator(".diff").first
            diff.wait_for(timeout=5_000)
            assert "+1 −0" in diff.inner_text()
            assert PLANTED in diff.inner_text()  # shown as text
            assert page.evaluate("window.__planted") is None  # and never run
            assert PLANTED in page.locator("#notes").inner_text()
            page.screenshot(path=str(shots / "diff.png"), full_page=True)
            # Restore as before the call: a preview of the files and line counts first.
            diff.locator("button[data-action=restore]").click()
            restore = diff.locator(".answer", has_text="Would restore")
            restore.wait_for(timeout=5_000)
            assert "notes.md  (+0 -1 lines)" in restore.inner_text()
            assert (project / "notes.md").read_text().endswith(f"{PLANTED}\n")  # preview only

            # Preview, then undo; the file on disk is as before the agent's write.
            row.locator("button[data-action=undo]").click()
            page.locator(".answer", has_text="Would undo 1 call").wait_for(timeout=5_000)
            assert (project / "notes.md").read_text().endswith(f"{PLANTED}\n")  # preview only
            page.locator("button[data-action=confirm-undo]").click()
            page.locator(".answer", has_text="Undid 1 call").wait_for(timeout=5_000)
            assert (project / "notes.md").read_text() == "first line\n"
            # The operator's undo is journaled too, and arrives live.
            page.locator("tr.entry", has_text="operator").first.wait_for(timeout=3_000)
            # What happened to this file: the agent's write and the operator's undo.
            row.locator("button[data-action=history]", has_text="notes.md").click()
            history = page.locator("#history-rows")
            history.locator("tr", has_text="undo").wait_for(timeout=5_000)
            written = history.locator("tr", has_text="write_file")
            assert "+1 −0" in written.inner_text() and "operator" in history.inner_text()
            page.screenshot(path=str(shots / "history.png"), full_page=True)

            # A command's change is a change (issue 46): its diff, and the file's history.
            edit = "open('notes.md', 'a').write('by a command\\n')"
            ran = agent(project, job_dir, ("run_command", {"command": ["python3", "-c", edit]}))
            assert ran[0].splitlines()[-1] == "changed 1 file: notes.md (+1 -0)", ran
            row = page.locator("tr.entry", has_text="run_command").first
            row.wait_for(timeout=3_000)
            row.click()
            diff = page.locator(".diff", has_text="by a command").first
            diff.wait_for(timeout=5_000)
            assert "+1 −0" in diff.inner_text()
            row.locator("button[data-action=history]", has_text="notes.md").click()
            history.locator("tr", has_text="run_command").wait_for(timeout=5_000)

            # A running job is listed and stopped from the page.
            script = f"print({PLANTED!r}, flush=True); import time; time.sleep(60)"
            started = agent(
                project, job_dir, ("start_job", {"command": ["python3", "-c", script]})
            )[0]
            job_id = re.search(r"Started job (\S+)", started).group(1)
            job = page.locator("#jobs li", has_text=job_id)
            kill = job.locator("button[data-action=kill]")
            kill.wait_for(timeout=5_000)
            job.locator(".joblog", has_text="window.__planted").wait_for(timeout=5_000)
            assert PLANTED in job.locator(".joblog").inner_text()  # its log, as text
            assert "running, still changing files (recorded when it ends)" in job.inner_text()
            assert page.evaluate("window.__planted") is None
            kill.click()
            page.locator("#jobs li", has_text=job_id).locator("text=stopped").wait_for(
                timeout=8_000
            )
            # The operator's kill is journaled like any call.
            page.locator("tr.entry", has_text="job_kill").first.wait_for(timeout=3_000)
            page.screenshot(path=str(shots / "console.png"), full_page=True)

            # A cross-site POST from the page's own context is refused without the header.
            status = page.evaluate(
                """async base => (await fetch(base + '/api/undo', {method: 'POST',
                    body: JSON.stringify({entry: 'x'})})).status""",
                console.base,
            )
            assert status == 403
            # Over HTTP: the agent's token gets 401 at /console; the operator's opens it.
            served = start(
                project,
                "--token",
                "tok-agent-0123456789",
                "--operator-token",
                "tok-operator-0123456789",
            )
            try:
                agent_token = {"authorization": "Bearer tok-agent-0123456789"}
                assert httpx2.get(f"{served.base}/console/", headers=agent_token).status_code == 401
                page.goto(f"{served.base}/console/")  # not signed in: the sign-in form
                page.fill("#token", "tok-agent-0123456789")
                page.click("#sign-in")
                page.locator("#status", has_text="not an operator credential").wait_for(
                    timeout=5_000
                )
                page.fill("#token", "tok-operator-0123456789")
                page.click("#sign-in")
                page.locator("tr.entry", has_text="write_file").first.wait_for(timeout=5_000)
            finally:
                assert served.stop() == 0
            browser.close()
        for shot in shots.iterdir():  # non-blank: a real page has many distinct bytes
            assert shot.stat().st_size > 10_000, shot
        # Without the cookie nothing is shown; the spent link does not sign in twice.
        assert httpx2.get(f"{console.base}/api/entries").status_code == 401
        spent = httpx2.post(f"{console.base}/login", json={"token": console.token})
        assert spent.status_code == 401 and "already used" in spent.text
        # A rebinding attempt (another Host) is refused before anything else.
        other = httpx2.get(f"{console.base}/", headers={"host": "evil.test"})
        assert other.status_code == 403
    finally:
        console.stop()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and "running" in (job_dir / f"{job_id}.json").read_text():
        time.sleep(0.1)
    assert '"running"' not in (job_dir / f"{job_id}.json").read_text()


class CookieCatcher:
    """An agent's dev server on another 127.0.0.1 port: browsers send a host's cookies to
    every port, so it receives the console's cookie when the operator opens its page."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.cookies: list[str] = []
        catcher = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                catcher.cookies.append(self.headers.get("cookie", ""))
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.end_headers()
                self.wfile.write(b"<p>an agent's dev server</p>")

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_cookie_leaked_to_another_port_opens_nothing(project: Path, tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    agent(project, job_dir, ("write_file", {"path": "notes.md", "content": "changed\n"}))
    console = RunningConsole(project, job_dir)
    catcher = CookieCatcher()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(console.login)
            page.locator("tr.entry", has_text="write_file").first.wait_for(timeout=10_000)
            page.goto(catcher.url)
            # The page still works after the detour: its key is kept for its own origin.
            page.goto(console.base + "/")
            page.locator("tr.entry", has_text="write_file").first.wait_for(timeout=10_000)
            browser.close()
        leaked = next(c for c in catcher.cookies if "awm_console" in c)  # the browser leaks it
        replay = {"cookie": leaked}
        for path in ("/api/entries", "/api/list/jobs", "/api/diff?id=x", "/events"):
            answer = httpx2.get(console.base + path, headers=replay, timeout=5)
            assert answer.status_code == 401, (path, answer.status_code)
        shell = httpx2.get(console.base + "/", headers=replay).text
        key = re.findall(r"[A-Za-z0-9_-]{40,}", shell)
        assert not key, "the page carries no secret a replayed cookie could read"
        undo = httpx2.post(console.base + "/api/undo", headers=replay, json={"entry": "x"})
        assert undo.status_code in (401, 403)
        assert (project / "notes.md").read_text() == "changed\n"
    finally:
        catcher.server.shutdown()
        console.stop()


def test_the_operator_approves_one_call_and_denies_another(project: Path, tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    (project / "old.txt").write_text("old\n")
    (project / "keep.txt").write_text(f"{PLANTED}\n")
    console = RunningConsole(project, job_dir)
    confirm = {"confirm": ("destructive",), "confirm_via": ("console",)}
    try:
        with sync_playwright() as p, concurrent.futures.ThreadPoolExecutor(1) as pool:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(console.login)
            page.wait_for_selector("#live:text('live')", timeout=10_000)
            queue = page.locator("#approvals")
            # The agent's delete waits for a person; the page shows exactly what it removes.
            waiting = pool.submit(
                agent, project, job_dir, ("delete_path", {"path": "old.txt"}), **confirm
            )
            asked = queue.locator("li.approval", has_text="delete_path")
            asked.wait_for(timeout=5_000)
            assert "removes old.txt (4 bytes)" in asked.inner_text()
            page.screenshot(path=str(tmp_path / "approval.png"), full_page=True)
            asked.locator("button[data-action=approve]").click()
            assert waiting.result(timeout=30)[0].startswith("Deleted old.txt")
            assert not (project / "old.txt").exists()
            done = page.locator("tr.entry", has_text="delete_path").first
            done.locator(".approval-note", has_text="approved by operator via console").wait_for(
                timeout=5_000
            )
            # The next one is denied: refused, the file stays, the agent is told who.
            waiting = pool.submit(
                agent, project, job_dir, ("delete_path", {"path": "keep.txt"}), **confirm
            )
            asked = queue.locator("li.approval", has_text="keep.txt")
            asked.wait_for(timeout=5_000)
            asked.locator("button[data-action=deny]").click()
            assert "denied by operator" in waiting.result(timeout=30)[0]
            assert (project / "keep.txt").exists()
            # Both decisions are in the timeline as the operator's.
            page.locator("tr.entry", has_text="approve").first.wait_for(timeout=5_000)
            page.locator("tr.entry", has_text="deny").first.wait_for(timeout=5_000)
            assert page.evaluate("window.__planted") is None
            browser.close()
        assert (tmp_path / "approval.png").stat().st_size > 10_000
    finally:
        console.stop()


TROJAN = "\u202e rtl"  # RIGHT-TO-LEFT OVERRIDE: rendered raw it shows as "lun … ltr"


def test_hidden_characters_are_visible_and_a_bad_line_blanks_nothing(
    project: Path, tmp_path: Path
) -> None:
    """Issue 43, items 14 and 15: bidi controls in agent text were rendered as such (a job
    output `\\u202e rtl` read backwards), and one journal line with a numeric `ts` or a
    string `paths` blanked the whole timeline."""
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    agent(
        project,
        job_dir,
        ("write_file", {"path": f"name{TROJAN}.txt", "content": f"x = 1 {TROJAN}\n"}),
        ("remember", {"text": f"note {TROJAN}"}),
    )
    journal = project / ".workspace-mcp" / "journal.jsonl"
    with journal.open("a") as out:
        out.write('{"ts": 12345, "tool": "write_file", "paths": "not-a-list", "id": "bad1"}\n')
        out.write(
            '{"ts": "2026-01-01T00:00:00Z", "tool": "grep", "paths": [1, {"a": 2}], "ms": "x", "id": "bad2"}\n'
        )
    console = RunningConsole(project, job_dir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(console.login)
            page.wait_for_selector("#live:text('live')", timeout=10_000)
            row = page.locator("tr.entry", has_text="U+202E").first
            row.wait_for(timeout=5_000)  # the good entries are there despite the bad lines
            assert page.locator("tr.entry", has_text="not-a-list").count() == 1
            assert "U+202E" in row.inner_text() and "\u202e" not in row.inner_text()
            assert row.locator(".has-hidden").count() >= 1  # the line is marked
            row.click()
            diff = page.locator(".diff").first
            diff.wait_for(timeout=5_000)
            assert "x = 1 U+202E rtl" in diff.inner_text()
            assert "\u202e" not in page.locator("body").inner_text()
            assert "U+202E" in page.locator("#notes").inner_text()
            page.screenshot(path=str(tmp_path / "hidden.png"), full_page=True)
            browser.close()
    finally:
        console.stop()


NOTIFICATIONS = """
window.__notified = [];
let permission = "default";
window.Notification = class {
  constructor(title, options) { window.__notified.push([title, (options || {}).body]); }
  static get permission() { return permission; }
  static async requestPermission() { permission = "granted"; return permission; }
};
"""


def test_a_grant_is_honoured_then_revoked_from_the_page(project: Path, tmp_path: Path) -> None:
    """Issue 48, item 2: "approve + 30 min" lets the same kind of call through without a
    question; the grant is listed, and revoking it on the page brings the question back."""
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    console = RunningConsole(project, job_dir)
    confirm = {"confirm": ("write",), "confirm_via": ("console",), "confirm_wait": 5.0}
    write = ("write_file", {"path": "notes.md", "content": "by the agent\n"})
    try:
        with sync_playwright() as p, concurrent.futures.ThreadPoolExecutor(1) as pool:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            # The browser's notifications, allowed and recorded (item 5: the page asks for
            # the permission and announces each pending approval).
            page.add_init_script(NOTIFICATIONS)
            page.goto(console.login)
            page.wait_for_selector("#live:text('live')", timeout=10_000)
            page.locator("#notify").click()
            waiting = pool.submit(agent, project, job_dir, write, **confirm)
            asked = page.locator("#approvals li.approval", has_text="write_file")
            asked.wait_for(timeout=5_000)
            deadline = time.monotonic() + 5
            while not page.evaluate("window.__notified.length") and time.monotonic() < deadline:
                page.wait_for_timeout(100)  # the page's CSP forbids wait_for_function's eval
            title, body = page.evaluate("window.__notified[0]")
            assert "waits for your approval" in title and body.startswith("write_file in ")
            assert "by the agent" not in body  # never what it writes
            asked.locator("button[data-action=approve-30-min]").click()
            assert waiting.result(timeout=30)[0].startswith("Updated notes.md")
            granted = page.locator("#grants li.grant", has_text="write_file")
            granted.wait_for(timeout=5_000)
            assert (
                "any session" in granted.inner_text() and "--confirm write" in granted.inner_text()
            )
            # The same kind again: no question.
            again = agent(project, job_dir, write, **confirm)
            assert again[0].startswith("Updated notes.md") or "content unchanged" in again[0]
            granted.locator("button[data-action=revoke]").click()
            page.locator("#grants", has_text="revoked").wait_for(timeout=5_000)
            # Revoked: the question is back.
            after = agent(
                project,
                job_dir,
                ("write_file", {"path": "notes.md", "content": "x\n"}),
                **{**confirm, "confirm_wait": 0.5},
            )
            assert after[0].startswith("Not run yet"), after
            # Item 6: the questions per session.
            counts = page.locator("#oversight li.oversight", has_text="3 calls ran")
            counts.wait_for(timeout=8_000)
            assert "2 asked about, 0 denied" in counts.inner_text()
            browser.close()
        journal = (project / ".workspace-mcp" / "journal.jsonl").read_text()
        assert '"tool":"grant"' in journal and '"tool":"revoke"' in journal
    finally:
        console.stop()


@requires(staging_missing())  # real bwrap and FUSE mounts
def test_a_grant_is_offered_only_where_it_can_apply(project: Path, tmp_path: Path) -> None:
    """A staged command asked about by its argv (`--confirm exec`) is approved once: the
    page offers no grant for it. One asked about by a rule (`--confirm risky`) is granted
    by what it changed, and the page offers it."""
    job_dir = tmp_path / "jobs"
    job_dir.mkdir(mode=0o700)
    console = RunningConsole(project, job_dir)

    def staged(confirm: str, command: str) -> str:
        settings = Settings(
            root=str(project),
            shell_mode="any",
            sandbox="bwrap",
            stage_commands=True,
            confirm=(confirm,),
            confirm_via=("console",),
            confirm_wait=0.2,
            job_dir=str(job_dir),
            audit=False,
        )

        async def run() -> str:
            async with Client(create_server(settings)) as client:
                result = await client.call_tool("bash", {"command": command})
                return result.content[0].text

        return asyncio.run(run())

    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            by_argv = pool.submit(staged, "exec", "echo x > made.txt").result(timeout=60)
            by_rule = pool.submit(staged, "risky", "echo 'all:' > Makefile").result(timeout=60)
        assert by_argv.startswith("Not landed yet") and by_rule.startswith("Not landed yet")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(console.login)
            exec_asked = page.locator("#approvals li.approval", has_text="made.txt")
            rule_asked = page.locator("#approvals li.approval", has_text="Makefile")
            exec_asked.wait_for(timeout=5_000)
            rule_asked.wait_for(timeout=5_000)
            for item, offered in ((exec_asked, 0), (rule_asked, 1)):
                assert item.locator("button[data-action=approve]").count() == 1
                assert item.locator("button[data-action=approve-30-min]").count() == offered
                assert item.locator("button[data-action=approve-this-session]").count() == offered
            browser.close()
    finally:
        console.stop()
