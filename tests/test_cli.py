from helpers import run_rgbt


def test_help_lists_verbs():
    out = run_rgbt("--help").stdout
    assert "rgbt" in out and "bench" in out


def test_unknown_verb_fails():
    proc = run_rgbt("no-such-verb", check=False)
    assert proc.returncode != 0
