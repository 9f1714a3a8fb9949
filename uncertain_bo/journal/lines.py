"""One line of a journal file (JSON Lines) as a record (:func:`parse_line`): a UTF-8 JSON object nested at most
:data:`MAX_DEPTH` deep whose strings are valid Unicode, or why it is not one; and, for a line that holds no record,
the type and index its text shows (:func:`indexed_type`), so the numbering of a damaged journal neither reuses nor
double-counts its index. Whether a record's fields are valid is the schema's (:mod:`uncertain_bo.journal.schema`);
the file, its header and its torn last line are :class:`~uncertain_bo.journal.journal.Journal`'s.
"""
from __future__ import annotations

import json
import re
from typing import Any

__all__ = ['MAX_DEPTH', 'parse_line', 'indexed_type']

#: deepest nesting of objects and lists a journal line may have (a record is 4 deep: observation, location,
#: covariance, row; a later writer's extra fields have room). Deeper lines are damage: Python's JSON reader and
#: writer recurse, so a line nested 100,000 deep would end a reader in a RecursionError
MAX_DEPTH = 32


def parse_line(line: bytes) -> tuple[Any, str | None]:
    """One journal line as a record: ``(record, None)``, or ``(None, why it is not one)``.

    A line is a record when it is a UTF-8 JSON object nested at most :data:`MAX_DEPTH` deep whose strings are
    valid Unicode (no unpaired surrogate escape such as ``"\\ud800"``, which no UTF-8 file can be written with).
    Whether its fields are valid is the schema's business (:mod:`uncertain_bo.journal.schema`).
    """
    try:
        rec = json.loads(line)
    except RecursionError:
        return None, f'nested deeper than {MAX_DEPTH} levels'
    except (ValueError, UnicodeDecodeError) as exc:   # JSONDecodeError, a 5,000-digit integer, bad UTF-8
        return None, str(exc)
    if not isinstance(rec, dict):
        return None, f'a JSON {type(rec).__name__}, not an object'
    if _deeper_than(rec, MAX_DEPTH):
        return None, f'nested deeper than {MAX_DEPTH} levels'
    if b'\\u' in line:   # escapes may encode a surrogate that no UTF-8 text (a CSV, a summary) can hold
        try:
            json.dumps(rec, ensure_ascii=False).encode('utf-8')
        except UnicodeEncodeError:
            return None, 'a string holds an unpaired surrogate (\\ud800-\\udfff)'
    return rec, None


_TYPE = re.compile(rb'^\s*\{\s*"type"\s*:\s*"(observation|en_route)"')
_INDEX = re.compile(rb'"index"\s*:\s*(\d{1,18})\s*[,}]')


def indexed_type(line: bytes) -> dict[str, Any]:
    """``{'type', 'index'}`` of an observation or en-route line that holds no record, where its text shows them
    (the writer's own layout: ``{"type": ..., "index": N, ...``), else ``{}``: for the numbering only, so the index
    of a damaged line is neither reused nor counted missing as well as skipped."""
    kind, index = _TYPE.match(line), _INDEX.search(line)
    return {'type': kind.group(1).decode(), 'index': int(index.group(1))} if kind and index else {}


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        children = v.values() if isinstance(v, dict) else v
        stack.extend((c, depth + 1) for c in children if type(c) is list or type(c) is dict)
    return False
