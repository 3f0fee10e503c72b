"""The benchmark records and the results table of benchmarks/RESULTS.md (benchmarks/_records.py)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from benchmarks import _records as R

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

CPUINFO = """\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16 sha_ni
bogomips\t: 4900.00

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16 sha_ni
"""

TWO_CORE = {
    "cpu": "AMD EPYC 7B13",
    "flags": ["avx2", "fma"],
    "cores": 2,
    "jax": "0.10.2",
    "device": "cpu",
}
SIXTEEN = {**TWO_CORE, "cpu": "Intel Xeon", "cores": 16}
H200 = {"cpu": "", "flags": [], "cores": 16, "jax": "0.11.2", "device": "NVIDIA H200"}


def figure(key, value, machine, date="2026-11-27", source=R.RUN_SOURCE, target="≥ 80 %"):
    return {
        "key": key,
        "label": f"figure {key}",
        "value": value,
        "unit": "%",
        "target": target,
        "machine": machine,
        "date": date,
        "source": source,
    }


def test_machine_is_read_from_cpuinfo():
    assert R.parse_cpuinfo(CPUINFO) == {
        "cpu": "AMD EPYC 7B13",
        "flags": ["avx", "avx2", "fma", "avx512f", "avx512_bf16"],  # in FLAGS order
        "cores": 2,
    }
    m = R.machine_from(CPUINFO, cores=1, jax_version="0.10.2", device="cpu")
    assert m["cores"] == 1 and m["jax"] == "0.10.2" and m["cpu"] == "AMD EPYC 7B13"
    assert R.machine_from("", cores=0, jax_version="x", device="cpu")["cores"] == 0
    assert R.machine_text(TWO_CORE) == "2-core AMD EPYC 7B13 (avx2 fma), jax 0.10.2"
    assert R.machine_text(H200) == "NVIDIA H200, jax 0.11.2"
    assert R.machine_text({"cpu": "", "flags": [], "cores": 0, "device": "cpu"}) == "–"


def test_figures_are_read_from_a_result():
    result = {"a": {"b": 0.78}, "rows": [{"s": 3.0}], "t": 6.0, "lse": 2.0, "text": "x"}
    heads = [
        R.Headline("a.b", "share", "%", "≥ 80 %", scale=100),
        R.Headline("rows.0.s", "first row", "s"),
        R.Headline("t", "ratio", "×", over="lse"),
        R.Headline("missing", "absent", "s"),
        R.Headline("text", "not a number", "s"),
    ]
    figs = R.figures(result, heads, TWO_CORE, "2026-11-28")
    assert [f["value"] for f in figs] == [78.0, 3.0, 3.0, None, None]
    assert figs[2]["key"] == "t/lse" and figs[0]["target"] == "≥ 80 %"
    assert all(f["machine"] == TWO_CORE and f["source"] == R.RUN_SOURCE for f in figs)


def test_table_from_given_records():
    records = {
        "zeta": R.make_record("zeta", "make bench BENCH=zeta", [figure("x", 0.5, TWO_CORE)]),
        "alpha": R.make_record(
            "alpha",
            "python -m benchmarks.alpha",
            [
                figure("y", 78, TWO_CORE, source="RESULTS.md, 2026-11-27 section 'S'"),
                figure("z", None, H200, date="", target="≥ 60 %"),
            ],
        ),
    }
    lines = R.render_table(records).splitlines()
    assert lines[0].startswith("| benchmark | command | figure | value | target | machine |")
    assert lines[2] == (
        "| `alpha` | `python -m benchmarks.alpha` | figure y | 78 % | ≥ 80 % | "
        "2-core AMD EPYC 7B13 (avx2 fma), jax 0.10.2 | 2026-11-27 | "
        "seeded: RESULTS.md, 2026-11-27 section 'S' |"
    )
    assert "| not measured | ≥ 60 % | NVIDIA H200, jax 0.11.2 | – | run |" in lines[3]
    assert lines[4].startswith("| `zeta` |") and "| 0.5 % |" in lines[4]
    assert R.format_value(2.6, "×") == "2.6×" and R.format_value(3920.4, "s") == "3,920 s"


def test_splice_replaces_only_the_table():
    text = f"# Results\n\n{R.BEGIN}\nold table\n{R.END}\n\n## History\n"
    assert R.splice(text, "new") == f"# Results\n\n{R.BEGIN}\nnew\n{R.END}\n\n## History\n"
    try:
        R.splice("# no markers\n", "new")
    except ValueError:
        pass
    else:
        raise AssertionError("a page without markers must fail")


def test_a_run_updates_only_its_own_rows(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    seeded = "RESULTS.md, 2026-11-23 section 'S'"
    old = R.make_record(
        "one",
        "make bench BENCH=one",
        [
            figure("x", 70, TWO_CORE, "2026-11-23", seeded),  # replaced: same key, 2 cores
            figure("x", 81, SIXTEEN, "2026-11-26", seeded),  # kept: another machine class
            figure("y", None, {**TWO_CORE, "cores": 0}, "", "never measured"),  # measured now
            figure("extra", 6.4, TWO_CORE, "2026-11-23", seeded),  # kept: no run makes it
        ],
    )
    other = R.make_record("two", "make bench BENCH=two", [figure("w", 1.5, TWO_CORE)])
    for rec in (old, other):
        (folder / f"{rec['benchmark']}.json").write_text(json.dumps(rec))
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Results\n{R.BEGIN}\n{R.END}\nhistory\n")

    new = R.make_record(
        "one",
        "make bench BENCH=one",
        [figure("x", 79, TWO_CORE, "2026-11-28"), figure("y", 12, TWO_CORE, "2026-11-28")],
    )
    R.save_run(folder, results, new)

    saved = json.loads((folder / "one.json").read_text())
    assert [(f["key"], f["value"]) for f in saved["figures"]] == [
        ("x", 79),
        ("y", 12),
        ("x", 81),
        ("extra", 6.4),
    ]
    text = results.read_text()
    assert text.endswith(f"{R.END}\nhistory\n")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 5 and sum("`two`" in r for r in rows) == 1  # the other benchmark
    assert "| 70 % |" not in text and "not measured" not in text


def test_every_benchmark_declares_headline_figures_and_has_a_record():
    records = R.load_records(BENCH / "records")
    for path in sorted(BENCH.glob("bench_*.py")):
        tree = ast.parse(path.read_text())
        assigned = [t for n in tree.body if isinstance(n, ast.Assign) for t in n.targets]
        names = {t.id for t in assigned if isinstance(t, ast.Name)}
        assert "HEADLINE" in names, path.name
        assert path.stem[len("bench_") :] in records, path.name
    for name, rec in records.items():
        assert rec["benchmark"] == name and rec["command"]
        for f in rec["figures"]:
            assert set(f) >= {"key", "label", "value", "unit", "target", "machine", "date"}
            assert f["source"] == R.RUN_SOURCE or f["source"].startswith(
                ("RESULTS.md", "never", "run ")
            )
            assert f["value"] is None or f["date"], (name, f["key"])  # a measurement is dated


def test_the_committed_table_is_the_records():
    text = (BENCH / "RESULTS.md").read_text()
    table = R.render_table(R.load_records(BENCH / "records"))
    assert R.splice(text, table) == text, "run `python -m benchmarks._records` to rewrite it"


def test_seeded_figures_name_a_section_of_the_history():
    text = (BENCH / "RESULTS.md").read_text()
    titles = [t.split(" — ")[0] for t in re.findall(r"^### (.+)$", text, flags=re.M)]
    for name, rec in R.load_records(BENCH / "records").items():
        for f in rec["figures"]:
            if re.search(r"RESULTS\.md, \d{4}-", f["source"]):
                assert any(f"section '{t}'" in f["source"] for t in titles), (name, f["source"])


def test_the_from_cell_tells_a_run_from_a_seeded_figure():
    assert R.source_text(R.RUN_SOURCE) == "run"
    hand = "run of the command, recorded by hand: RESULTS.md, 2026-11-28 section 'x'"
    assert R.source_text(hand) == hand
    assert R.source_text("RESULTS.md, 2026-11-26 section 'y'") == (
        "seeded: RESULTS.md, 2026-11-26 section 'y'"
    )


def test_prune_headline_is_the_savings_every_task_reaches():
    from benchmarks.bench_prune import within_target

    def row(task, ratio, pct, kind="replay"):
        return {"task": task, "kind": kind, "updates_ratio": ratio, "change_pct": pct}

    rows = [
        row("digits", 1.90, -0.04),
        row("digits", 3.75, 6.47),  # longer code: not within the target
        row("textures", 5.02, -13.4),
        row("clevr", 3.63, 1.49),
        row("clevr", 1.83, -0.14),
        row("clevr", 9.0, -1.0, kind="real"),  # real runs repeat a replayed schedule
    ]
    assert within_target(rows) == 1.83
    assert within_target([row("digits", 3.75, 6.47)]) is None
