"""The definitions in a syntax tree (issue 16): classes, functions, methods and their
kin, nested as in the source, each with its kind, name, line range and one-line
signature. One table per language says which node types define something; the walk is
iterative (minified or generated files nest deeply) and goes through tree-sitter's
ERROR nodes, so a file with syntax errors still outlines what parses.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..limits import (
    OUTLINE_CACHE_FILES,
    OUTLINE_INDENT_MAX_DEPTH,
    OUTLINE_SIGNATURE_CHARS,
    OUTLINE_SIGNATURE_SCAN_BYTES,
)
from .languages import ParseTimeout, parse

_C = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "enum_specifier": "enum",
    "union_specifier": "union",
}
_JS = {
    "class_declaration": "class",
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "method_definition": "method",
}
_TS = {
    **_JS,
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "function_signature": "function",
    "abstract_method_signature": "method",
    "internal_module": "namespace",
}
KINDS: dict[str, dict[str, str]] = {
    "python": {"class_definition": "class", "function_definition": "function"},
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
    "rust": {
        "function_item": "function",
        "function_signature_item": "function",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
        "impl_item": "impl",
        "mod_item": "module",
        "type_item": "type",
        "macro_definition": "macro",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "annotation",
        "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "c": _C,
    "cpp": {**_C, "class_specifier": "class", "namespace_definition": "namespace"},
}
# Nodes around a definition that belong to it: decorators, `export`, `template <...>`.
WRAPPERS = {"decorated_definition", "export_statement", "template_declaration"}
_NEED_BODY = {"struct_specifier", "enum_specifier", "union_specifier", "class_specifier"}
# A function defined inside one of these is a method.
CONTAINERS = {"class", "impl", "trait", "interface", "struct", "record", "enum"}
# `const App = () => ...`: a variable whose value is a function is a function.
_VARIABLES = {"lexical_declaration", "variable_declaration"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function"}
# Declarator nodes that end the walk down a C/C++ declarator to the declared name.
_DECLARED_NAMES = {
    "identifier",
    "field_identifier",
    "qualified_identifier",
    "operator_name",
    "destructor_name",
    "type_identifier",
}
# First words that already say what a signature defines; others get the kind in front.
_KEYWORDS = {
    "def",
    "async",
    "class",
    "function",
    "func",
    "fn",
    "struct",
    "enum",
    "trait",
    "impl",
    "mod",
    "interface",
    "type",
    "namespace",
    "union",
    "record",
    "pub",
    "export",
    "const",
    "let",
    "var",
    "abstract",
    "template",
    "macro_rules!",
    "unsafe",
    "@interface",
}


@dataclass(frozen=True)
class Definition:
    kind: str
    name: str
    qualified: str  # dotted through the enclosing definitions: Parser.parse
    start: int  # 1-based first line, decorators/export/template included
    end: int  # 1-based last line
    doc_start: int  # first line of the comment block directly above, else start
    signature: str
    depth: int

    def line(self) -> str:
        words = self.signature.split("(", 1)[0].split()
        said = words and (words[0] in _KEYWORDS or self.kind in words)
        shown = self.signature if said else f"{self.kind} {self.signature}"
        indent = "  " * min(self.depth, OUTLINE_INDENT_MAX_DEPTH)
        return f"{indent}{self.start}-{self.end}  {shown}"


class Outline(list[Any]):
    """A file's definitions; `partial` when the walk stopped at CODE_FILE_SECONDS."""

    partial: bool = False


_cache: OrderedDict[tuple[str, bytes], Outline] = OrderedDict()
_cache_lock = threading.Lock()


def definitions(language: str, source: bytes, tree: Any = None) -> Outline:
    """Every definition in `source`, in source order (parents before children).

    Cached by content (an agent outlines a file, then reads a symbol from it, then
    finds a name in it): a changed file has another digest, so a hit is always right.
    `tree`: the source's syntax tree, when the caller parsed it already (one parse).
    """
    key = (language, hashlib.blake2b(source, digest_size=16).digest())
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    found = _definitions(language, source) if tree is None else _definitions(language, source, tree)
    with _cache_lock:
        _cache[key] = found
        while len(_cache) > OUTLINE_CACHE_FILES:
            _cache.popitem(last=False)
    return found


def _definitions(language: str, source: bytes, tree: Any = None) -> Outline:
    """Every definition in `source`, uncached.

    A tree-sitter query finds the candidate nodes (in C: a Python walk over every node
    of a 2,000-line file cost three times the parse); nesting comes from each one's
    parent chain.
    """
    deadline = time.monotonic() + limits.CODE_FILE_SECONDS
    found = Outline()
    try:
        tree = tree or parse(language, source, deadline)
    except ParseTimeout:
        found.partial = True
        return found
    kinds = KINDS[language]
    # The query runs in C without a way to stop it, and is superlinear on a node with
    # millions of children (a function of 5 million parameters: 90 s); past a size a
    # walk that looks at the clock does the same (issue 43).
    if len(source) > limits.OUTLINE_QUERY_MAX_BYTES:
        nodes, complete = _walked(language, tree.root_node, deadline)
        found.partial = not complete
    else:
        nodes = _candidates(language, tree.root_node)
    candidates = sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte))
    # Syntax nodes nest, so in (start, -end) order the definitions enclosing a candidate
    # are those still open on a stack: walking each candidate's parent chain instead was
    # quadratic in the nesting depth (a 24,000-level file took 87 s; issue 28).
    open_: list[tuple[int, Definition]] = []  # (end byte, definition), outermost first
    for count, node in enumerate(candidates):
        if count % 64 == 63 and time.monotonic() > deadline:
            found.partial = True
            break
        while open_ and open_[-1][0] <= node.start_byte:
            open_.pop()
        parent = open_[-1][1] if open_ else None
        depth, qualifier, enclosing = 0, "", None
        if parent is not None:
            depth, qualifier, enclosing = parent.depth + 1, parent.qualified + ".", parent.kind
        definition = _definition(node, kinds, language, source, depth, qualifier, enclosing)
        if definition is not None:
            open_.append((node.end_byte, definition))
            found.append(definition)
    return found


class Enclosing:
    """The definitions around places in one parsed file, found by walking down to each
    place (issue 47): `find_references` needs the enclosing definition of a few
    references, and the whole outline cost a third of a cold query. Each definition met
    on the way is made once, as `definitions()` makes it (same nesting, same names)."""

    def __init__(self, language: str, source: bytes, tree: Any) -> None:
        self.language, self.source, self.root = language, source, tree.root_node
        self.types, self.kinds = _types(language), KINDS[language]
        self._made: dict[tuple[int, int, str], Definition | None] = {}

    def at(self, start: int, end: int, until: float) -> tuple[Any, str | None]:
        """The smallest node holding bytes [start, end), and the qualified name of the
        innermost definition holding that node (None at the top level); (None, None)
        past `until` (a file nested thousands deep costs a step per level)."""
        node, parent = self.root, None
        cursor = self.root.walk()
        for step in itertools.count(1):
            if step % 1024 == 0 and time.monotonic() > until:
                return None, None
            if node.type in self.types:
                parent = self._made_from(node, parent) or parent
            if cursor.goto_first_child_for_byte(start) is None:
                break
            child = cursor.node
            if child is None or child.start_byte > start or child.end_byte < end:
                break
            node = child
        return node, None if parent is None else parent.qualified

    def _made_from(self, node: Any, parent: Definition | None) -> Definition | None:
        key = (node.start_byte, node.end_byte, node.type)
        if key not in self._made:
            depth, qualifier, enclosing = 0, "", None
            if parent is not None:
                depth, qualifier, enclosing = parent.depth + 1, parent.qualified + ".", parent.kind
            self._made[key] = _definition(
                node, self.kinds, self.language, self.source, depth, qualifier, enclosing
            )
        return self._made[key]


_QUERIES: dict[str, Any] = {}


def _types(language: str) -> set[str]:
    types = set(KINDS[language])
    if language in ("javascript", "typescript", "tsx"):
        types |= _VARIABLES
    return types


def _walked(language: str, root: Any, deadline: float) -> tuple[list[Any], bool]:
    """The query's candidates by a walk that stops at `deadline` (and whether it ended)."""
    types = _types(language)
    found: list[Any] = []
    cursor = root.walk()
    count = 0
    while True:
        count += 1
        if count % 4096 == 0 and time.monotonic() > deadline:
            return found, False
        node = cursor.node
        if node is not None and node.type in types:
            found.append(node)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return found, True


def _candidates(language: str, root: Any) -> list[Any]:
    import tree_sitter

    from .languages import grammar

    query = _QUERIES.get(language)
    if query is None:
        text = " ".join(f"({t}) @d" for t in sorted(_types(language)))
        query = _QUERIES[language] = tree_sitter.Query(grammar(language), text)
    return tree_sitter.QueryCursor(query).captures(root).get("d", [])


def _definition(
    node: Any, kinds: Any, language: Any, source: Any, depth: Any, qualifier: Any, enclosing: Any
) -> Definition | None:
    kind = kinds.get(node.type)
    value = None
    if kind is None and node.type in _VARIABLES and language in ("javascript", "typescript", "tsx"):
        value = _function_value(node)
        if value is None:
            return None
        kind = "function"
    if kind is None:
        return None
    if node.type in _NEED_BODY and node.child_by_field_name("body") is None:
        return None  # `struct s *p;` names a type, it does not define one
    name = _name(node, language, value)
    if not name:
        return None
    if kind == "function" and enclosing in CONTAINERS:
        kind = "method"
    outer = node
    while outer.parent is not None and outer.parent.type in WRAPPERS:
        outer = outer.parent
    short = name.rsplit("::", 1)[-1]
    qualified = qualifier + name.replace("::", ".")
    if node.type == "method_declaration" and language == "go":
        receiver = _first_of_type(node.child_by_field_name("receiver"), "type_identifier")
        if receiver is not None:
            qualified = f"{_text(receiver)}.{short}"  # func (s *Server) Start: Server.Start
    return Definition(
        kind=kind,
        name=short,
        qualified=qualified,
        start=outer.start_point.row + 1,
        end=node.end_point.row + 1,
        doc_start=_doc_start(outer) + 1,
        signature=_signature(node, source, value),
        depth=depth,
    )


def _first_of_type(node: Any, wanted: str) -> Any:
    pending = [node] if node is not None else []
    while pending:
        current = pending.pop(0)
        if current.type == wanted:
            return current
        pending.extend(current.named_children)
    return None


def _function_value(declaration: Any) -> Any:
    for declarator in declaration.named_children:
        if declarator.type == "variable_declarator":
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return declarator
    return None


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None else ""


def _name(node: Any, language: str, declarator: Any) -> str:
    if declarator is not None:
        return _text(declarator.child_by_field_name("name"))
    if node.type == "impl_item":
        return _text(node.child_by_field_name("type"))
    if node.type == "function_definition" and language in ("c", "cpp"):
        current = node.child_by_field_name("declarator")
        while current is not None and current.type not in _DECLARED_NAMES:
            inner = current.child_by_field_name("declarator")
            current = (
                inner
                if inner is not None
                else (current.named_children[0] if current.named_children else None)
            )
        return _text(current)
    return _text(node.child_by_field_name("name"))


def _signature(node: Any, source: bytes, declarator: Any) -> str:
    holder = declarator.child_by_field_name("value") if declarator is not None else node
    body = holder.child_by_field_name("body")
    start = node.start_byte
    if node.type == "type_spec" and node.parent is not None:
        start = node.parent.start_byte  # `type S struct`, not `S struct`
    # Never more than a bounded slice: on a one-line file a body-less node's text is the
    # rest of the file, once per definition.
    limit = start + OUTLINE_SIGNATURE_SCAN_BYTES
    if body is not None and body.start_byte > start:
        end = min(body.start_byte, limit)
        for child in holder.children:  # a comment before the body is not the signature
            if "comment" in child.type and start < child.start_byte < end:
                end = child.start_byte
                break
        text = source[start:end].decode("utf-8", "replace")
    else:
        text = source[start : min(node.end_byte, limit)].decode("utf-8", "replace")
        text = text.split("\n", 1)[0]
    text = " ".join(text.split()).rstrip(" {:")
    if len(text) > OUTLINE_SIGNATURE_CHARS:
        text = text[: OUTLINE_SIGNATURE_CHARS - 1] + "…"
    return text


def _doc_start(node: Any) -> int:
    """The row where the comment block directly above `node` starts (its own row if none)."""
    row = node.start_point.row
    sibling = node.prev_sibling
    while sibling is not None and "comment" in sibling.type and sibling.end_point.row >= row - 1:
        row = sibling.start_point.row
        sibling = sibling.prev_sibling
    return int(row)
