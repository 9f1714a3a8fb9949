"""One line of a journal file as a record (uncertain_bo/journal/lines.py)."""
import json

from uncertain_bo.journal.lines import MAX_DEPTH, indexed_type, parse_line


def test_a_line_is_a_record_only_when_it_is_a_shallow_json_object_of_valid_unicode():
    assert parse_line(b'{"type": "start", "position": [1.0, 2.0]}') == ({'type': 'start', 'position': [1.0, 2.0]}, None)
    assert parse_line(b'[1, 2]') == (None, 'a JSON list, not an object')
    assert parse_line(b'{"type": "start", "posit')[0] is None                         # cut short
    deep = b'{"a": ' * (MAX_DEPTH + 1) + b'1' + b'}' * (MAX_DEPTH + 1)
    assert parse_line(deep) == (None, f'nested deeper than {MAX_DEPTH} levels')
    shallow = b'{"a": ' * (MAX_DEPTH - 1) + b'1' + b'}' * (MAX_DEPTH - 1)
    assert parse_line(shallow)[1] is None
    assert 'unpaired surrogate' in parse_line(b'{"type": "start", "note": "\\ud800"}')[1]
    assert parse_line(json.dumps({'type': 'start', 'note': '\u00e9'}).encode())[1] is None   # a paired escape


def test_the_type_and_index_a_damaged_line_shows():
    assert indexed_type(b'{"type": "observation", "index": 17, "y": NaN, "target": [1,') == \
        {'type': 'observation', 'index': 17}
    assert indexed_type(b'{"type": "decision", "index": 3, ') == {}                 # not an indexed type
    assert indexed_type(b'garbage "index": 4') == {}
