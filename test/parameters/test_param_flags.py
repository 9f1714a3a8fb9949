"""Command-line flags built from parameter specs (uncertain_bo.parameters.flags): one validation (Param.check) and the
spec's allowed set in the message and the help."""
import argparse

import pytest

from uncertain_bo.parameters.flags import flag_help, flag_type, flag_value, list_flag_type
from uncertain_bo.parameters.specs import Param, ParameterError

RATE = Param('rate', 2.5, 'how often, Hz', range=(0.0, 10.0))
COUNT = Param('count', 5, 'how many', range=(1, 100))
MODE = Param('mode', 'a', 'which', choices=('a', 'b'))
ON = Param('on', True, 'whether')


@pytest.mark.parametrize('spec, text, value', [
    (RATE, '0', 0.0), (RATE, ' 10 ', 10.0), (RATE, '1e-3', 0.001), (COUNT, '1', 1), (COUNT, '100', 100),
    (MODE, 'b', 'b'), (ON, 'false', False), (ON, 'True', True),
])
def test_valid_text_gives_the_checked_value(spec, text, value):
    got = flag_value(spec, text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize('spec, text', [
    (RATE, '-0.1'), (RATE, '10.5'), (RATE, 'nan'), (RATE, 'inf'), (RATE, 'fast'), (COUNT, '0'), (COUNT, '2.5'),
    (COUNT, '101'), (MODE, 'c'), (ON, 'yes'),
])
def test_what_the_spec_refuses_the_flag_refuses(spec, text):
    """Oracle: Param.check on the same value refuses it too (or the text is not of the spec's type)."""
    with pytest.raises(ParameterError, match=r'is not ' + spec.allowed().replace('[', r'\[').replace('(', r'\(')):
        flag_value(spec, text)


def test_argparse_reports_the_allowed_set_in_one_line(capsys):
    parser = argparse.ArgumentParser(prog='p')
    parser.add_argument('--count', type=flag_type(COUNT))
    parser.add_argument('--rates', type=list_flag_type(RATE, ('auto',)))
    assert parser.parse_args(['--count', '7', '--rates', '1, auto,2']).count == 7
    assert parser.parse_args(['--rates', '1,auto']).rates == '1,auto'   # validated, left for the command to split
    for argv, message in ((['--count', '0'], "argument --count: '0' is not a int in [1, 100]"),
                          (['--rates', '1,11'], "argument --rates: '11' is not a float in [0, 10] or 'auto'"),
                          (['--rates', ','], "argument --rates: ',' names no value")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert message in capsys.readouterr().err


def test_help_names_the_parameter_its_allowed_set_and_default():
    assert flag_help(COUNT, 'how many things') == "how many things (the explorer's count: a int in [1, 100]; default 5)"
    assert flag_help(MODE, 'which', "the problem's").endswith("one of 'a', 'b'; default the problem's)")
    assert "default 'a'" in flag_help(MODE, 'which')


def test_list_parameters_have_no_flag():
    with pytest.raises(ParameterError, match='no flag'):
        flag_value(Param('xy', [1.0, 2.0], 'a pair, m', length=2), '1,2')
