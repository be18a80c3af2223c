"""`--confirm risky` (issue 48): ask a person about what executes or escapes review later,
and let everything else run, recorded and reviewable afterwards.

People stop reading prompts that come for every write; this policy asks only where a
mistake or a planted change costs more than an undo: files that run code on the next
build, push or install (CI, build definitions, dependency manifests and lockfiles),
files that hold secrets, deletes of many files at once, commands that can reach the
network, and a forced undo. The policy is this one table: the approval gate decides by
it, `--help` and the README show it (the README's table is generated from it and a test
holds them together), and every request names the rule that asked.

Paths are gitignore-style globs, matched against the real paths a call resolves to
(core.callscope.touched), never against how the agent spelled them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .limits import RISKY_DELETE_ENTRIES


@dataclass(frozen=True)
class Rule:
    name: str  # what `--risky-rules` names, and the request shows
    why: str  # one line: why a person should look
    paths: tuple[str, ...] = ()  # a change to one of these asks
    deletes_over: int | None = None  # a call that deletes more entries asks
    network: bool = False  # a command run with network asks
    forced_revert: bool = False  # undo / restore_file with force asks


RULES: tuple[Rule, ...] = (
    Rule(
        "ci",
        "runs on every push, with the repository's secrets",
        paths=(
            ".github/workflows/**",
            ".github/actions/**",
            ".gitlab-ci.yml",
            ".circleci/**",
            "Jenkinsfile",
            "azure-pipelines.yml",
            ".buildkite/**",
            ".pre-commit-config.yaml",
        ),
    ),
    Rule(
        "build",
        "runs on the next build or install (scripts, build hooks, images)",
        paths=(
            "Makefile",
            "*.mk",
            "Dockerfile",
            "Dockerfile.*",
            "*.dockerfile",
            "docker-compose*.yml",
            "compose*.yaml",
            "package.json",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "build.gradle*",
            "pom.xml",
            "CMakeLists.txt",
            "justfile",
            "Taskfile.yml",
            "tox.ini",
            "noxfile.py",
            "conftest.py",
        ),
    ),
    Rule(
        "dependencies",
        "chooses what code is downloaded and run",
        paths=(
            "requirements*.txt",
            "**/requirements/*.txt",
            "constraints*.txt",
            "Pipfile",
            "Pipfile.lock",
            "poetry.lock",
            "uv.lock",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            ".npmrc",
            ".yarnrc*",
            "pip.conf",
            "Cargo.toml",
            "Cargo.lock",
            "go.mod",
            "go.sum",
            "Gemfile",
            "Gemfile.lock",
            "composer.json",
            "composer.lock",
        ),
    ),
    Rule("secrets", "holds secrets", paths=(".env", ".env.*", ".envrc", "*.pem", "*.key")),
    Rule(
        "mass-delete",
        f"removes more than {RISKY_DELETE_ENTRIES} files or folders at once",
        deletes_over=RISKY_DELETE_ENTRIES,
    ),
    Rule(
        "network",
        "a command with network (--sandbox-network) can send the workspace anywhere",
        network=True,
    ),
    Rule("forced-undo", "overwrites changes made since the recorded call", forced_revert=True),
)
NAMES = tuple(rule.name for rule in RULES)
# The same names as a type, for the setting that chooses among them (a test holds the two
# together: get_args(RuleName) == NAMES).
RuleName = Literal[
    "ci", "build", "dependencies", "secrets", "mass-delete", "network", "forced-undo"
]


def chosen(names: tuple[str, ...]) -> tuple[Rule, ...]:
    """The rules `--risky-rules` keeps (all when empty); unknown names are the caller's
    ConfigError (configuration checks them against NAMES)."""
    return RULES if not names else tuple(rule for rule in RULES if rule.name in names)


def markdown_table() -> str:
    """The README's table of the policy (tests/test_risk.py holds them together)."""
    lines = ["| rule | asks when | why |", "| --- | --- | --- |"]
    for rule in RULES:
        if rule.paths:
            when = "a change to " + ", ".join(f"`{p}`" for p in rule.paths)
        elif rule.deletes_over is not None:
            when = f"one call deletes more than {rule.deletes_over} entries"
        elif rule.network:
            when = "a command runs with `--sandbox-network`"
        else:
            when = "`undo` or `restore_file` with `force`"
        lines.append(f"| {rule.name} | {when} | {rule.why} |")
    return "\n".join(lines)


def summary() -> str:
    """One line per rule, for `--help`."""
    return "; ".join(f"{rule.name}: {rule.why}" for rule in RULES)
