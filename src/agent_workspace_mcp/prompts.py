"""MCP prompts: guided interviews that end in tool calls.

Each prompt is a script for the model: what to ask the user (one question at a time),
what to check, and which tool call finishes the job. They are plain text, so every
client that lists prompts (Claude Code shows them as `/mcp__<server>__<name>`) can use
them; nothing here depends on elicitation support. Descriptions are given explicitly,
never as docstrings: FastMCP parses a docstring with griffe, which costs start-up time.
"""

import functools
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.prompts import Message, Prompt
from pydantic import Field

from .core.skills import DEFAULT_SKILLS_DIR
from .services import Services


def register(app: FastMCP, services: Services) -> None:
    for prompt in _prompts(services.skills.skills_dir or DEFAULT_SKILLS_DIR):
        app.add_prompt(prompt.model_copy())  # each server owns its components

    @app.completion
    def complete(ref, argument, context):
        # Workspace names for any prompt's `workspace` argument.
        if getattr(ref, "type", "") == "ref/prompt" and argument.name == "workspace":
            return [ws.name for ws in services.workspaces if ws.name.startswith(argument.value)]
        return None


@functools.lru_cache(maxsize=8)
def _prompts(skills_dir: str) -> tuple[Prompt, ...]:
    """The prompts, built once per skills folder rather than once per server: FastMCP builds
    each one's argument validators (~1.5 ms a prompt), and test suites build hundreds."""

    def resume(
        focus: Annotated[
            str | None, Field(description="What you want to get back to, if known.")
        ] = None,
        workspace: Annotated[
            str | None, Field(description="Workspace name (default: the primary).")
        ] = None,
    ) -> list[Message]:
        target = f' with workspace="{workspace}"' if workspace else ""
        focus_line = f"The user wants to focus on: {focus}\n" if focus else ""
        return [
            Message(
                f"Recover the context of this workspace before doing anything else.\n{focus_line}\n"
                f"1. Call work_log (limit 20){target} to see what happened recently.\n"
                f"2. Call recall{target} to read the notes saved deliberately.\n"
                f"3. Call change_status{target} to see the active change, its tasks and the "
                "suggested next action.\n"
                "4. Then answer with a short plan: what was done, what is next (start from the "
                "suggested next action), and any open question. Ask before starting work.\n"
                "When you finish a chunk of work later, call remember with what changed and what "
                "should happen next."
            )
        ]

    def new_skill(
        goal: Annotated[str | None, Field(description="What the skill should help with.")] = None,
    ) -> list[Message]:
        start = f"The user already said the goal is: {goal}\n" if goal else ""
        return [
            Message(
                "Help the user write a new Agent Skill for this workspace. Interview them one "
                f"question at a time.\n{start}\n"
                "1. Goal: what should the skill accomplish?\n"
                "2. When to use it: what situation or request should make an agent load it? This "
                "becomes the description, so make it specific (max 1024 characters).\n"
                "3. Steps: the procedure, the commands or files involved, and how to check the "
                "result.\n\n"
                "Then pick a name: 1-64 lowercase letters, digits and single hyphens "
                "(e.g. release-notes). Call write_file with\n"
                f"  path: {skills_dir}/<name>/SKILL.md\n"
                "  content:\n"
                "---\n"
                "name: <name>\n"
                "description: <when to use it, one or two sentences>\n"
                "---\n\n"
                "# <Title>\n\n<the steps as a numbered list, with commands in code blocks>\n\n"
                "The folder name must equal `name`. Finally call the skill tool with the name to "
                "confirm it loads, and show the user the result."
            )
        ]

    def plan_change(
        goal: Annotated[str, Field(description="What the change should achieve.")],
    ) -> list[Message]:
        return [
            Message(
                f"Plan a tracked change for this goal: {goal}\n\n"
                "1. Ask the user the questions you need answered first (scope, constraints, how "
                "to know it is done). One question at a time; keep it short.\n"
                "2. Call change_create with a short title and the goal.\n"
                "3. Write the proposal with change_doc (stage: proposal): why, what changes, what "
                "does not, risks. Add each constraint the user named with constraint_add.\n"
                "4. Break the work into small, verifiable tasks and call task_add once per task, "
                "in the order they should be done.\n"
                "5. Finish with change_status and show the user the plan and the next action."
            )
        ]

    return (
        Prompt.from_function(
            resume,
            name="resume",
            title="Resume work in this workspace",
            description="Recover context (recent activity, notes, the active change) and "
            "propose a short plan.",
        ),
        Prompt.from_function(
            new_skill,
            name="new_skill",
            title="Write a new Agent Skill",
            description="Interview the user (goal, when to use it, steps) and write a valid "
            "SKILL.md.",
        ),
        Prompt.from_function(
            plan_change,
            name="plan_change",
            title="Plan a change",
            description="Turn a goal into a tracked change: proposal, then tasks.",
        ),
    )
