"""Issue 27: temperature-like flags anywhere in the positive normal range are answered (exit 0)
or refused in one ``error:`` line that names the flag (exit 2) -- never dgp's own failure
(exit 1), a traceback or "please report it".

Every command that takes a temperature, a kernel width or a cross-class weight is run with that
flag at 1e-307, 1e-300, 1e300 and 1e307 (``--eps`` outside (0, 1) is refused by name; a
``--grid`` value is named by its parameter's flag or by ``--grid``; a ``--search`` range by
``--search``).
"""

from __future__ import annotations

import numpy as np
import pytest

VALUES = ("1e-307", "1e-300", "1e300", "1e307")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("extreme-flags")
    W = np.exp(-np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0))))
    np.save(d / "W.npy", W)
    t = 2 * np.pi * np.arange(8) / 8  # 8 labels: 12 made each phase cell a third slower
    np.savetxt(d / "y.csv", np.c_[np.cos(t), np.sin(t)] * 2 + [1.0, 0.0], delimiter=",")
    np.savetxt(d / "c.csv", np.repeat(np.arange(3), [3, 4, 5]), fmt="%d")
    return {"W": str(d / "W.npy"), "y": str(d / "y.csv"), "c": str(d / "c.csv")}


def _cases():
    """(flag named on refusal, argv template with {v} the extreme value and {W}, {y}, {c})."""
    out = [
        ("--tau", "classify {W} --similarity cosine --tau {v} --dim 2"),
        ("--tau", "classify {W} --similarity euclidean --tau {v} --dim 2"),
        ("--eps", "classify --objective soft-supcon --labels {c} --eps {v} --tau 0.5 --dim 2"),
        ("--tau", "classify --objective soft-supcon --labels {c} --eps 0.1 --tau {v} --dim 2"),
        ("--tau", "classify --objective supcon --labels {c} --tau {v} --dim 2"),
        ("--tau", "supcon --sizes 5,3,2 --tau {v}"),
        ("--tau", "supcon --sizes 5,3 --tau {v}"),
        ("--eps", "supcon --sizes 5,3,2 --tau 0.5 --eps {v}"),
        ("--tau", "supcon --sizes 5,3,2 --tau {v} --batch-size 4"),
        ("--tau", "supcon --sizes 5,3,2 --eps 0.1 --tau {v} --batch-size 4"),
        ("--tau", "optimum {W} --tau {v}"),
        ("--tau", "optimum {W} --tau {v} --dim 1"),
        ("--tau", "optimum {W} --tau {v} --batch-size 3"),
        ("--tau", "phase --objective soft-supcon --labels {c} --eps 0.1 --dim 2 "
                  "--grid tau=0.5,{v}"),
        ("--eps", "phase --objective soft-supcon --labels {c} --tau 0.5 --dim 2 "
                  "--grid eps=0.5,{v}"),
        ("--sigma", "phase --objective y-aware --labels {y} --tau 0.5 --dim 2 "
                    "--grid sigma=1,{v}"),
        ("--label-tau", "phase --objective x-clr --labels {y} --tau 0.5 --dim 2 "
                        "--grid label_tau=1,{v}"),
        ("--sigma", "phase --objective y-aware --labels {y} --sigma {v} --dim 2 "
                    "--grid tau=0.1,1"),
        ("--eps", "phase --objective soft-supcon --labels {c} --eps {v} --dim 2 "
                  "--grid tau=0.1,1"),
        ("--tau", "phase --objective soft-supcon --labels {c} --tau {v} --grid eps=0.1,0.5 "
                  "--dim 2"),
        ("--sigma", "recommend --objective y-aware --labels {y} --sigma {v} --dim 2 "
                    "--want realizable"),
        ("--label-tau", "recommend --objective x-clr --labels {y} --label-tau {v} --dim 2 "
                        "--want realizable"),
        ("--eps", "recommend --objective soft-supcon --sizes 5,3,2 --eps {v} --dim 2 "
                  "--want realizable"),
        ("--eps", "recommend --objective soft-supcon --sizes 5,3,2 --eps {v} --want simplex"),
        ("--tau", "recommend --objective soft-supcon --sizes 5,3,2 --tau {v} --want simplex"),
        ("--tau", "recommend --objective y-aware --labels {y} --sigma 1 --tau {v} "
                  "--want min-dim"),
        ("--tau", "recommend --objective supcon --sizes 5,3,2 --want minority-cosine<=0.2 "
                  "--tau {v}"),
    ]
    for obj, flag in (("y-aware", "--sigma"), ("euclid-euclid", "--sigma"),
                      ("y-aware-colnorm", "--sigma"), ("x-clr", "--label-tau")):
        out.append((flag, f"classify --objective {obj} --labels {{y}} {flag} {{v}} --tau 0.5 "
                          "--dim 2"))
        out.append(("--tau", f"classify --objective {obj} --labels {{y}} {flag} 1 --tau {{v}} "
                              "--dim 2"))
    return out


def _search_cases():
    out = []
    for lo, hi in (("1e-307", "1e-300"), ("1e300", "1e307"), ("1e-307", "1e307")):
        out.append(f"recommend --objective y-aware --labels {{y}} --sigma 1 --dim 2 "
                   f"--want realizable --search {lo}:{hi}")
        out.append(f"recommend --objective soft-supcon --sizes 5,3,2 --eps 0.1 --want simplex "
                   f"--search {lo}:{hi}")
    return out


def _check(r, flags):
    text = r.err + r.out
    assert "Traceback" not in text and "please report" not in text, text
    assert r.code in (0, 2), (r.code, r.err)
    if r.code == 2:
        lines = [line for line in r.err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), r.err
        assert any(f in lines[0] for f in flags), (flags, lines[0])


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize(("flag", "argv"), _cases())
def test_extreme_value_answered_or_refused_by_name(cli, files, flag, argv, value):
    args = argv.format(v=value, **files).split()
    flags = [flag, "--grid"] if "--grid" in args and "{v}" in argv.split("--grid")[1] else [flag]
    _check(cli(*args), flags)


@pytest.mark.parametrize("argv", _search_cases())
def test_extreme_search_range_answered_or_refused_by_name(cli, files, argv):
    _check(cli(*argv.format(**files).split()), ["--search"])


def test_refusals_say_why_and_what_to_use(cli, files):
    """The new refusals carry their reason and the largest (smallest) value taken."""
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "1e300")
    assert r.code == 2 and "2^53" in r.err and "flat" in r.err
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "1e-300", "--batch-size", "4")
    assert r.code == 2 and "tau >= 0.004" in r.err
    r = cli("classify", "--objective", "y-aware", "--labels", files["y"], "--sigma", "1",
            "--tau", "1e307", "--dim", "2")
    assert r.code == 2 and "inconsistent" in r.err and "use tau <=" in r.err
    r = cli("recommend", "--objective", "y-aware", "--labels", files["y"], "--sigma", "1",
            "--dim", "2", "--want", "realizable", "--search", "1e300:1e307")
    assert r.code == 2 and r.err.startswith("error: --search reaches tau = ")
    # two classes stay antipodal at any temperature: answered, not refused
    assert cli("supcon", "--sizes", "5,3", "--tau", "1e307").code == 0
