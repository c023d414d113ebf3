"""The command line speaks its own words: flags, not Python keywords; did-you-mean for a mistyped
command; bare ``dgp`` prints the help; ``--version`` without the engine; class names of a labels
file in messages and JSON; ``recommend`` and ``phase`` output people read right."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dgp.cli import cli_words


def test_cli_words_turns_keywords_into_flags_and_leaves_the_rest():
    flags = {"--dim", "--want", "--reduction", "--log-weights", "--grid"}
    assert cli_words("give dim=D or want='min-dim' (got reduction='sum')", flags) == (
        "give --dim D or --want min-dim (got --reduction sum)")
    assert cli_words("pass their logarithms, log_weights=...", flags) == (
        "pass their logarithms, --log-weights")
    # not a keyword of a flag, a range, a quoted grid item, numpy's keywords: unchanged
    for text in ("use dim=1:16:16 or list the values", "--grid 'dim=1:4:3' is bad",
                 "numpy.asarray(W, dtype=float)", "sigma=None means the default",
                 "engine='auto' picks"):
        assert cli_words(text, flags) == text


def test_library_keywords_never_reach_a_command_line_error(cli, tmp_path):
    """Errors that the library words with keyword arguments name the flags on the CLI."""
    (tmp_path / "f.csv").write_text("y\n1.5\n2\n")
    (tmp_path / "two.csv").write_text("a,b\n1,2\n3,4\n")
    np.savez(tmp_path / "m.npz", a=np.eye(3), b=np.eye(3))
    W = np.ones((3, 3))
    W[2, :] = 0.0
    np.save(tmp_path / "w.npy", W)
    cases = [
        (("classify", "--objective", "supcon", "--labels", tmp_path / "f.csv"), "--objective"),
        (("classify", "--objective", "supcon", "--labels", tmp_path / "two.csv"),
         "--label-column"),
        (("classify", tmp_path / "m.npz"), "numpy.save"),
        (("classify", tmp_path / "w.npy"), "--log-weights"),
    ]
    for args, flag in cases:
        r = cli(*args, "--tau", "0.5", "--dim", "2")
        assert r.code == 2 and r.err.count("\n") == 1, (args, r.err)
        assert flag in r.err, (args, r.err)
        for keyword in ("kind=", "column=", "key=", "log_weights=", "dim="):
            assert keyword not in r.err, (args, r.err)


def test_free_optimum_too_large_names_the_dim_flag(cli, tmp_path, monkeypatch):
    import dgp.optima._api as api

    monkeypatch.setattr(api, "FREE_MAX_K", 3)
    np.save(tmp_path / "w.npy", np.random.default_rng(0).random((5, 5)) + 0.1)
    r = cli("optimum", tmp_path / "w.npy", "--tau", "0.5")
    assert r.code == 2 and "--dim D" in r.err and "dim=D" not in r.err


def test_mistyped_command_and_choice_get_a_did_you_mean(cli):
    r = cli("clasify")
    assert r.code == 2 and "did you mean classify?" in r.err and r.err.count("\n") == 1
    r = cli("recomend")
    assert r.code == 2 and "did you mean recommend?" in r.err
    r = cli("classify", "x.npy", "--similarity", "cosin", "--tau", "1", "--dim", "2")
    assert r.code == 2 and "did you mean cosine?" in r.err
    r = cli("zzzz")
    assert r.code == 2 and "did you mean" not in r.err


def test_bare_dgp_prints_the_help_and_exits_0(cli):
    r = cli()
    assert r.code == 0 and r.err == ""
    assert r.out.startswith("usage: dgp") and "classify" in r.out and "recommend" in r.out
    assert r.out == cli("--help").out


def test_version_does_not_import_the_engine():
    code = ("import sys; from dgp.cli import main; s = main(['--version']); "
            "print(s, 'scipy' in sys.modules, any(m.startswith('dgp.engine') for m in "
            "sys.modules))")
    from pathlib import Path

    import dgp

    root = Path(dgp.__file__).resolve().parents[1]  # the dgp under test, whatever is installed
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=root).stdout.split("\n")
    assert out[0].startswith("dgp ")
    assert out[1] == "0 False False"


def test_class_names_of_a_labels_file_reach_errors_and_json(cli, tmp_path):
    (tmp_path / "one.csv").write_text("label\ncat\ncat\ndog\nbird\nbird\n")
    r = cli("classify", "--objective", "supcon", "--labels", tmp_path / "one.csv", "--tau",
            "0.5", "--dim", "2")
    assert r.code == 2 and "class 'dog' with 1 sample" in r.err
    (tmp_path / "ok.csv").write_text("label\ncat\ncat\ndog\ndog\nbird\nbird\nbird\n")
    r = cli("classify", "--objective", "supcon", "--labels", tmp_path / "ok.csv", "--tau",
            "0.5", "--dim", "2", "--json")
    assert r.code == 0
    assert r.json["certificate"]["structure"]["classes"] == ["bird", "cat", "dog"]
    assert r.json["certificate"]["structure"]["sizes"] == [3, 2, 2]
    r = cli("phase", "--objective", "supcon", "--labels", tmp_path / "one.csv", "--grid",
            "tau=0.1:1:3", "--dim", "2")
    assert r.code == 2 and "class 'dog'" in r.err
    # integer labels keep speaking of their numbers
    (tmp_path / "num.csv").write_text("y\n0\n0\n1\n2\n2\n")
    r = cli("classify", "--objective", "supcon", "--labels", tmp_path / "num.csv", "--tau",
            "0.5", "--dim", "2")
    assert r.code == 2 and "class 1 with 1 sample" in r.err


@pytest.mark.parametrize("column", ["label", "1"])
def test_label_file_labels_are_the_names_in_file_order(tmp_path, column):
    from dgp.io import load_labels

    (tmp_path / "t.csv").write_text("id,label\n0,dog\n1,cat\n2,dog\n3,emu\n")
    lab = load_labels(tmp_path / "t.csv", column=column if column == "label" else 1)
    assert lab.labels.tolist() == ["dog", "cat", "dog", "emu"]
    assert [lab.class_name(int(v)) for v in lab.values] == lab.labels.tolist()


def _row(out: str, name: str) -> str:
    """The text of one row of a printed record (its continuation lines joined)."""
    lines = out.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith(name + " "))
    text = [lines[start][len(name):].strip()]
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        text.append(line.strip())
    return " ".join(text)


def test_recommend_brackets_print_apart_on_both_sides_of_the_threshold(cli):
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
            "--want", "realizable", "--dim", "3")
    assert r.code == 0, r.err
    below, above = _row(r.out, "below"), _row(r.out, "above")
    tau_below = float(below.split(",")[0].removeprefix("tau = "))
    tau_above = float(above.split(",")[0].removeprefix("tau = "))
    assert tau_below < tau_above  # printed apart, in the right order
    assert "realizable" in below and "inconsistent" in above
    js = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
             "--want", "realizable", "--dim", "3", "--json").json
    br = js["certificate"]["bracket"]
    # the printed values are the bracket's, to the digits shown
    assert tau_below == pytest.approx(br["below"]["tau"], rel=1e-12)
    assert tau_above == pytest.approx(br["above"]["tau"], rel=1e-12)
    # tau* = K / ((K - 1)(-log eps)) lies inside the printed bracket
    assert tau_below <= 3 / (2 * -np.log(0.2)) * (1 + 1e-12)
    assert 3 / (2 * -np.log(0.2)) <= tau_above * (1 + 1e-12)
    assert "next" not in js


def test_distinct_digits_separates_any_two_floats():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from dgp.display import distinct_digits

    @settings(max_examples=200, deadline=None)
    @given(st.floats(1e-300, 1e300), st.integers(1, 10**6))
    def check(a, ulps):
        b = float(np.nextafter(a, np.inf)) if ulps == 1 else a * (1 + ulps * 2.0**-52)
        if b == a:
            return
        k = distinct_digits(a, b)
        assert 6 <= k <= 17 and f"{a:.{k}g}" != f"{b:.{k}g}"
        assert k == 6 or f"{a:.{k - 1}g}" == f"{b:.{k - 1}g}"  # the fewest digits

    check()


def test_recommend_with_no_answer_suggests_the_next_question_in_flags(cli):
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
            "--want", "min-dim", "--tau", "3")
    assert r.code == 0
    assert _row(r.out, "dim") == "none"
    nxt = _row(r.out, "next")
    assert "--want realizable" in nxt and "--dim D" in nxt and "want=" not in nxt
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
            "--want", "realizable", "--dim", "1", "--json")
    assert r.json["tau"] is None
    # --json is the result's dict as it is: the library's question, in keyword arguments
    import dgp

    res = dgp.recommend("soft-supcon", sizes=[3, 3, 3], eps=0.2, want="realizable", dim=1)
    assert "want='min-dim'" in res.next_question and r.json["next"] == res.next_question
    assert r.json == json.loads(json.dumps(res.to_dict()))
    # the text says the same question in flags
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
            "--want", "realizable", "--dim", "1")
    nxt = _row(r.out, "next")
    assert "--want min-dim" in nxt and "--search LO:HI" in nxt and "want=" not in nxt


def test_recommend_asks_for_a_missing_value_without_phase_words(cli):
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3", "--want", "realizable",
            "--dim", "2")
    assert r.code == 2 and r.err.startswith("error: --eps is missing")
    assert "grid" not in r.err
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "3,3", "--grid", "tau=0.1:1:3",
            "--dim", "2")
    assert r.code == 2 and "in the grid" in r.err


@pytest.mark.slow  # a phase map through the CLI: about 5 s
def test_phase_prints_one_excess_row(cli):
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "4,4,4", "--eps", "0.1", "--grid",
            "tau=0.01:2:8", "--dim", "2")
    assert r.code == 0, r.err
    rows = [line for line in r.out.split("\n") if line.startswith("excess")]
    assert len(rows) == 1
    text = _row(r.out, "excess loss")
    # every cell has its value: those whose free prototypes need 3 dimensions are solved in
    # R^2 by the one rank-d solver (they said "without a value" before)
    assert "nats above the bound" in text and "without a value" not in text


def test_inconsistent_reason_says_which_end_needs_which_dimension():
    """The ranks at the two end points of the c interval, said apart (and once when equal)."""
    import dgp
    from dgp.cli.tour import tour_cases

    case = next(c for c in tour_cases() if c.name == "circle, tau R^2 < sigma^2")
    res = dgp.classify(case.W, similarity=case.similarity, tau=case.tau, dim=case.dim)
    assert res.verdict == "inconsistent"
    full = dgp.classify(case.W, similarity=case.similarity, tau=case.tau, dim=case.W.shape[0])
    lo_rank = int(res.reason.split("dimensions: ")[1].split(" ")[0])
    assert lo_rank > case.dim and full.verdict != "inconsistent"
    assert "needs more than dim = 2 dimensions" in res.reason
    assert "at the lower end point" in res.reason and "at the upper one" in res.reason
    assert "and 3 at the end points" not in res.reason


def test_a_long_command_says_it_is_still_working(monkeypatch, capsys):
    """The heartbeat: whole progress lines on stderr after PROGRESS_AFTER seconds, only on a
    terminal; nothing for a command that ends sooner, or that reports its own progress."""
    import argparse
    import time

    import dgp.cli as cli_mod

    monkeypatch.setattr(cli_mod, "PROGRESS_AFTER", 0.05)
    monkeypatch.setattr(cli_mod, "PROGRESS_EVERY", 0.05)
    with cli_mod._Heartbeat("classify", enabled=True):
        time.sleep(0.4)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) >= 2 and all(ln.startswith("dgp classify: still working (") for ln in lines)
    with cli_mod._Heartbeat("classify", enabled=True):
        pass  # ends before PROGRESS_AFTER: silent
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
    args = argparse.Namespace(command="classify", quiet=False)
    assert not cli_mod._heartbeat(args).enabled  # stderr is not a terminal under pytest
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli_mod._heartbeat(args).enabled
    assert not cli_mod._heartbeat(argparse.Namespace(command="phase")).enabled
    assert not cli_mod._heartbeat(argparse.Namespace(command="classify", quiet=True)).enabled
    # --json leaves stdout to the object and stderr to the progress; --quiet silences it
    assert cli_mod._heartbeat(argparse.Namespace(command="optimum", json=True)).enabled
    assert not cli_mod._heartbeat(argparse.Namespace(command="optimum", json=True,
                                                     quiet=True)).enabled


def test_minority_reason_prints_its_two_temperatures_apart(cli, tmp_path):
    (tmp_path / "n.csv").write_text("label\ncat\ncat\ncat\ncat\ndog\ndog\nbird\nbird\n")
    r = cli("recommend", "--objective", "supcon", "--labels", tmp_path / "n.csv", "--want",
            "minority-cosine<=0", "--minority", "0,2")
    assert r.code == 0, r.err
    reason = _row(r.out, "reason")
    up_to = float(reason.split("up to tau = ")[1].split(" ")[0])
    at = float(reason.split("at tau = ")[1].split(" ")[0])
    assert up_to < at
    js = cli("recommend", "--objective", "supcon", "--labels", tmp_path / "n.csv", "--want",
             "minority-cosine<=0", "--minority", "0,2", "--json").json
    assert js["certificate"]["bracket"]["below"]["max_cosine"] <= 0
    assert js["certificate"]["bracket"]["above"]["max_cosine"] > 0


def test_a_keyword_whose_flag_belongs_to_another_command_names_that_command(cli, tmp_path):
    W = np.ones((3, 3))
    W[2, :] = 0.0  # row 2 has no positive weight: the hint suggests log-weights
    np.save(tmp_path / "w.npy", W)
    r = cli("optimum", tmp_path / "w.npy", "--tau", "0.5")  # optimum has no --log-weights
    assert r.code == 2 and "`dgp classify --log-weights`" in r.err
    r = cli("classify", tmp_path / "w.npy", "--tau", "0.5", "--dim", "2")
    assert r.code == 2 and "instead, --log-weights" in r.err and "`dgp classify" not in r.err
    # the one analysis that takes such a row, in words that hold in Python and the shell
    assert "the optimum's mini-batch prediction (given a batch size) takes" in r.err


def test_every_command_takes_quiet_and_it_silences_the_heartbeat(monkeypatch):
    """docs/cli.md: --quiet silences progress, on every command (it was missing on supcon)."""
    import dgp.cli as cli_mod

    parser = cli_mod.build_parser()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    for name, sub in parser.get_default("subcommands").items():
        assert "--quiet" in sub._option_string_actions, name
    args = parser.parse_args(["supcon", "--sizes", "5,3,2", "--tau", "0.2", "--quiet"])
    assert args.quiet and not cli_mod._heartbeat(args).enabled
    args = parser.parse_args(["supcon", "--sizes", "5,3,2", "--tau", "0.2"])
    assert cli_mod._heartbeat(args).enabled
