"""The check of a whole journal (uncertain_bo/journal/check.py): the numbering of its indexed records."""
import math

from uncertain_bo.journal.check import check_journal


def test_a_damaged_huge_index_does_not_make_the_numbering_jump():
    header = {'type': 'header', 'format': 'uncertain_bo.journal.journal', 'version': 1}

    def obs(i, y=1.0):
        return {'type': 'observation', 'index': i, 'target': [1.0, 2.0],
                'location': {'kind': 'dirac', 'mean': [1.0, 2.0]}, 'y': y}

    checked = check_journal(header, [(2, obs(0)), (3, obs(10 ** 12)), (4, obs(10 ** 12 + 1, math.nan)), (5, obs(1))])
    assert [r['index'] for r in checked.records] == [0, 1] and checked.next_index == 2
    assert checked.skipped == 2 and 'a damaged index' in checked.damage[0].message
