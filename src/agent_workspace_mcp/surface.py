"""The served tool surface, computed in one place: which tools a client sees, under which
names, for a profile, `--tools`, `--disable-tools`, `--read-only` and the enabled
features, and for every other tool name one sentence saying why it is not served.

`server.build` applies it (`tools/list`, the unknown-tool answer), `--list-profiles`
prints it and `check` exercises it; nothing else decides what is served. No FastMCP
here: the inputs are plain names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .core.echo import echo, listing
from .core.errors import ConfigError
from .core.nearmiss import closest
from .profiles import PROFILES, Profile
from .settings import Settings

READ_ONLY = "the server is read-only (--read-only)"


@dataclass(frozen=True)
class Surface:
    profile: Profile
    served: tuple[str, ...]  # the names a client sees (a profile's in its own order)
    reasons: Mapping[str, str] = field(default_factory=dict)  # any other name -> why not

    def client_name(self, ours: str) -> str:
        return self.profile.renames.get(ours, ours)

    def why_not(self, name: str) -> str | None:
        """Why `name` (our spelling or the profile's) is not served, or None when it is
        served or is no tool at all."""
        if name in self.served:
            return None
        return self.reasons.get(name)


def compute(
    settings: Settings,
    registered: Mapping[str, bool],
    enabled_by: Mapping[str, str],
    catalogue: Callable[[], set[str]] = set,
) -> Surface:
    """The surface of a server with these settings. `registered`: our name of every tool
    the modules registered -> whether it writes; `enabled_by`: tools that only a flag
    registers -> that flag; `catalogue()`: every tool name any configuration has (to
    tell a typo from a tool that is merely not served; asked only then). A `--tools` or
    `--disable-tools` name that is no tool, or a `--tools` name this configuration does
    not serve, is a ConfigError."""
    profile = PROFILES[settings.profile]
    renames = profile.renames
    reasons: dict[str, str] = {}

    def off(ours: str, why: str) -> None:
        for name in (ours, renames.get(ours, ours)):
            reasons.setdefault(name, why)

    for ours in enabled_by:
        if ours in registered:
            continue
        asked = settings.shell_mode is not None or settings.tasks or settings.unconfined
        if not settings.execution_allowed and asked:
            off(
                ours,
                "command tools are off over HTTP unless the operator passes --allow-remote-exec",
            )
        elif not settings.execution_allowed:
            off(ours, f"the operator enables it with {enabled_by[ours]} and --allow-remote-exec")
        else:
            off(ours, f"the operator enables it with {enabled_by[ours]}")
    candidates: list[str] = []
    for ours, writes in registered.items():
        name = renames.get(ours, ours)
        if profile.tools is not None and name not in profile.tools:
            off(ours, f"the {profile.name} profile does not serve it")
        elif settings.read_only and writes:
            off(ours, READ_ONLY)
        else:
            candidates.append(name)
    if profile.tools is not None:  # in the profile's own order
        candidates.sort(key=profile.tools.index)
    known = set(registered) | set(enabled_by) | set(candidates)
    for other in PROFILES.values():
        known |= set(other.tools or ()) | set(other.renames.values())

    def resolve(flag: str, name: str) -> str | None:
        """The served name `name` selects, or None (after checking it is a tool)."""
        served_name = renames.get(name, name)
        if served_name in candidates:
            return served_name
        if name not in known and name not in catalogue():
            close = closest(name, candidates)
            hint = f"; did you mean {close[0]}?" if close else "; see --list-profiles"
            raise ConfigError(f"{flag}: unknown tool '{echo(name)}'{hint}")
        # --read-only takes the writing tools out of any --tools list: one list can serve
        # both modes. Any other --tools name that is not served is a mistake.
        if flag == "--tools" and reasons.get(name) != READ_ONLY:
            why = reasons.get(name) or f"the {profile.name} profile does not serve it"
            raise ConfigError(
                f"--tools {name}: not served: {why} (served: {listing(sorted(candidates))})"
            )
        return None  # --disable-tools of a tool that is off anyway

    served = candidates
    if settings.tools:
        chosen = {resolve("--tools", name) for name in settings.tools}
        for name in served:
            if name not in chosen:
                reasons[name] = "the operator's --tools leaves it out"
        served = [name for name in served if name in chosen]
    if settings.disable_tools:
        resolved = {resolve("--disable-tools", name) for name in settings.disable_tools}
        dropped = {name for name in resolved if name is not None}
        for name in dropped:
            reasons[name] = "the operator turned it off (--disable-tools)"
        served = [name for name in served if name not in dropped]
    for ours, name in renames.items():  # our spelling of a renamed tool: say what it is
        if name in served:
            reasons[ours] = f"this server serves it as {name} (the {profile.name} profile)"
        elif name in reasons:
            reasons[ours] = reasons[name]
    return Surface(profile, tuple(served), reasons)
