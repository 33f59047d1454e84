"""The README is a front page and the pages under docs/ stay true to the tree: generated tables match
their sources, every link resolves, and the module map names every module of td3_lib."""

import re
import shlex
from pathlib import Path

import pytest

from conftest import script_module
from td3_lib import TD3Config
from td3_lib.__main__ import build_parser
from td3_lib.course import results as shipped
from td3_lib.course.paper import TABLE2, learning_curves
from td3_lib.stats import LAST_K, bootstrap_difference_ci, difference, paper_scores, permutation_p_value

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


generate = script_module(DOCS / "generate.py", "docs_generate")


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; a front page has at most 250, the rest goes under docs/"


def test_generated_tables_match_their_sources():
    stale = generate.stale_pages()
    assert not stale, f"out of date with their sources: {sorted(stale)}; run python docs/generate.py"


def test_results_table_shows_each_entry_and_provenance_only_where_recorded():
    entry = dict(file="x.csv", lesson="02 07", env="Hopper-v5", command="python experiments/x.py",
                 seeds=[0, 1, 2, 3, 4], steps=300_000, wall_s=86_400.0, version="0.1.0",
                 runs={"TD3": [0, 1, 2, 3, 4], "TD3-DP": [0, 1, 2]})
    table = generate.results_table([entry])
    assert table.splitlines()[0] == "| file | lessons | env | seeds | steps | wall clock | command |"
    assert table.splitlines()[2] == ("| `x.csv` | 02, 07 | Hopper-v5 | 0-4; TD3-DP: 0-2 | 300,000 | 24.0 h "
                                     "| `python experiments/x.py` |")
    recorded = dict(entry, file="y.csv", commit="abc123", versions={"torch": "2.13.0", "mujoco": "4.0.0"})
    rows = generate.results_table([entry, recorded]).splitlines()
    assert rows[0].endswith("| command | commit | versions |")
    assert rows[2].endswith("| not recorded | not recorded |")
    assert rows[3].endswith("| abc123 | torch 2.13.0, mujoco 4.0.0 |")
    # Runs of one entry made before and after provenance was recorded: those before read "not recorded".
    mixed = dict(entry, file="z.csv", commit=[None, "abc123"], versions=[None, {"torch": "2.13.0"}])
    assert generate.results_table([mixed]).splitlines()[2].endswith("| not recorded, abc123 | not recorded, torch 2.13.0 |")


def synthetic_ablation(scores: dict[str, list[float]], bias: dict[str, float]) -> list[dict]:
    """Rows of a Hopper-like result: each seed's 3 evaluations score its value, with a constant bias."""
    return [{"variant": v, "seed": seed, "step": step, "eval_mean": score, "q_true": 100.0,
             "q_estimate": 100.0 + bias[v] + seed} for v, seeds in scores.items()
            for seed, score in enumerate(seeds) for step in (10_000, 20_000, 30_000)]


def test_ablation_table_gives_each_variant_against_td3_and_the_papers_runs_cut_at_the_step():
    scores = {"TD3": [10, 11, 12, 13, 14], "DDPG": [0, 1, 1, 4, 4], "TD3-CDQ": [9, 12, 10, 14, 13],
              "TD3-TPS": [11, 12, 13, 14, 15], "TD3-DP": [12, 12, 12, 12, 12]}
    rows = synthetic_ablation(scores, {"TD3": -3, "DDPG": 1, "TD3-CDQ": -10, "TD3-TPS": -5, "TD3-DP": -2})
    paper = [[{"step": s, "eval_mean": float(s // 1000 + k)} for s in range(10_000, 60_000, 10_000)] for k in (0, 2)]
    lines = generate.ablation_table(rows, paper, 30_000).splitlines()
    assert lines[0] == ("| variant | seeds | score at 30,000 steps | critic's bias | minus TD3 | 95% interval | p "
                        "| separates |")
    assert lines[2] == "| TD3 | 5 | 12.0 ± 1.6 | −1.0 ± 1.6 (above 0 on 1 of 5) |  |  |  |  |"
    # DDPG: every seed below every TD3 seed, so p is 2 of the 252 splits; its interval is lesson 07's
    # TD3 - DDPG, negated.
    td3_low, td3_high = bootstrap_difference_ci(scores["TD3"], scores["DDPG"])
    assert lines[3] == (f"| DDPG (AHE) | 5 | 2.0 ± 1.9 | +3.0 ± 1.6 (above 0 on 5 of 5) | −10.0 "
                        f"| [{-td3_high:+.1f}, {-td3_low:+.1f}] | 0.008 | yes |".replace("-", "−"))
    assert lines[4].startswith("| TD3 − CDQ | 5 | 11.6 ± 2.1 | −8.0 ± 1.6 (above 0 on 0 of 5) | −0.4 |")
    assert lines[4].endswith(f"| {permutation_p_value(scores['TD3-CDQ'], scores['TD3']):.3f} | no |")
    assert lines[5].split(" | ")[4:6] == ["+1.0", "[{:+.1f}, {:+.1f}]".format(
        *bootstrap_difference_ci(scores["TD3-TPS"], scores["TD3"])).replace("-", "−")]
    assert lines[6].startswith("| TD3 − DP | 5 | 12.0 ± 0.0 |")
    # The paper's runs at 30,000 steps: each the mean of its evaluations at 10k, 20k and 30k (20 and 22).
    assert lines[7] == ("| the paper's TD3 (its authors' runs: Hopper-v1, the paper's settings) | 2 | 21.0 ± 1.4 "
                        "| not published |  |  |  |  |")
    with pytest.raises(ValueError, match="reached only 50,000 steps"):
        generate.ablation_table(rows, paper, 60_000)


def test_the_readme_says_what_its_ablation_table_shows():
    """The README's prose around the generated table: no return separates, DDPG and TD3 − CDQ score lowest
    and TD3 − TPS and TD3 − DP level with TD3 (within 5%), the bias is above 0 on every seed without clipped
    double Q and below it on every seed with it, and the paper's runs score higher."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| variant | seeds | score at"):].split("\n\n")[0].splitlines()[2:]
    cells = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in table}
    assert "no variant's return separates from TD3's" in text
    assert [c[7] for name, c in cells.items() if c[7].strip(" |")] == ["no |"] * 4
    without_cdq = ("DDPG (AHE)", "TD3 − CDQ")
    for name in ("TD3", "DDPG (AHE)", "TD3 − CDQ", "TD3 − TPS", "TD3 − DP"):
        assert cells[name][3].endswith(f"(above 0 on {5 if name in without_cdq else 0} of 5)"), name
    assert "TD3 − CDQ and DDPG score lowest" in text and "TD3 − TPS and TD3 − DP end\nlevel with TD3" in text
    score = {name: float(c[2].split(" ± ")[0]) for name, c in cells.items()}
    assert sorted(score, key=score.get)[:2] == ["DDPG (AHE)", "TD3 − CDQ"]
    assert all(abs(float(cells[name][4].replace("−", "-"))) < 0.05 * score["TD3"] for name in ("TD3 − TPS", "TD3 − DP"))
    paper = next(c for name, c in cells.items() if name.startswith("the paper's"))
    assert all(float(paper[2].split(" ± ")[0]) > float(c[2].split(" ± ")[0]) for c in cells.values() if c is not paper)


def test_the_readme_says_at_each_budget_whether_td3_minus_ddpg_separates():
    """The README's prose under its table of TD3 against DDPG says, at each budget the table scores, whether
    TD3 − DDPG separates, with the table's p (Table 2's score, the one the difference is taken on)."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| steps | score | TD3 |"):].split("\n\n")[0].splitlines()[2:]
    after = text[text.index("| steps | score | TD3 |"):]
    prose = " ".join(after[after.index(generate.END):after.index("\n## ")].split())
    ours = [[c.strip() for c in line.strip("| ").split(" | ")] for line in table if " | Table 2: " in line]
    assert [c[0] for c in ours] == ["300,000", "1,000,000"]
    for step, _, _, _, _, _, p, separates in ours:
        verdict, other = ("separates", "does not separate")[::1 if separates == "yes" else -1]
        assert re.search(rf"at {step} steps,? TD3 − DDPG {verdict} \(p = {p}\)", prose, re.I), (step, verdict, p)
        assert not re.search(rf"at {step} steps,? TD3 − DDPG {other}", prose, re.I), (step, other)


LESSON_07 = ROOT / "notebooks" / "07_ablations.ipynb"


def lesson_cells(notebook: Path, kind: str) -> list[str]:
    """The sources of a lesson's cells of one kind ("markdown" or "code")."""
    import json

    return ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == kind]


def lesson_prose(notebook: Path) -> str:
    """A lesson's markdown, its whitespace folded to single spaces."""
    return " ".join(" ".join(text.split()) for text in lesson_cells(notebook, "markdown"))


def test_lesson_07_says_what_its_shipped_hopper_ablation_shows():
    """Lesson 07 reads its Hopper-v5 ablation from one shipped file (``HOPPER_ABLATION``): its prose names that
    file's budget, says that nothing separates from TD3 only where the README's generated table (made from the
    same file) says so for every variant, and quotes TD3's spread over seeds."""
    code = "\n".join(lesson_cells(LESSON_07, "code"))
    file = re.search(r'^HOPPER_ABLATION = "([^"]+)"', code, re.M).group(1)
    rows, step = shipped.load(file), shipped.entry(file)["steps"]
    prose = lesson_prose(LESSON_07)
    assert f"The ablation is shown at **{step:,} steps" in prose
    table = generate.ablation_table(rows, learning_curves("Hopper-v5"), step).splitlines()
    verdicts = [line.split(" | ")[7].strip(" |") for line in table[3:7]]
    assert len(verdicts) == 4 and set(verdicts) <= {"yes", "no"}
    assert (f"At {step:,} steps nothing separates from TD3." in prose) == (verdicts == ["no"] * 4)
    td3 = shipped.finals(rows, "TD3", last_k=LAST_K)
    assert f"TD3's own seeds run from {td3.min():.1f} to {td3.max():.1f}" in prose


def test_lesson_07_says_at_each_budget_whether_td3_minus_ddpg_separates():
    """Lesson 07's prose on TD3 against DDPG at 300,000 and 1,000,000 steps gives the verdict and the p of the
    shipped runs scored as the paper's Table 2 scores them, and the paper's gap beside ours."""
    rows, prose = shipped.load("hopper_v5_1m.csv"), lesson_prose(LESSON_07)
    for step in (300_000, 1_000_000):
        td3, ddpg = (paper_scores(shipped.histories(rows, v), step) for v in ("TD3", "DDPG"))
        d = difference(td3.finals, ddpg.finals)
        verdict = "separates" if d.separates else "does not separate"
        assert re.search(rf"At {step:,} steps (TD3 − DDPG|it) {verdict} \(p = {d.p:.3f}\)", prose), (step, verdict)
    paper = TABLE2["Hopper"]["TD3"] - TABLE2["Hopper"]["DDPG"]
    assert f"The paper's gap, {paper:+.1f}, is larger than ours, {d.mean:+.1f}" in prose


def test_lesson_07_reads_its_pendulum_ablation_as_the_shipped_runs_give_it():
    """The learner's batched Pendulum ablation equals the shipped runs on the CPU that made them, so the
    lesson's prose about it must hold for the shipped runs: no final score separates from TD3's, TD3 − CDQ's
    gap and p, and TD3 − DP's earlier swing-up (first evaluation above −500), which separates."""
    rows, prose = shipped.load("pendulum_variants.csv"), lesson_prose(LESSON_07)
    final = {v: shipped.finals(rows, v, last_k=LAST_K) for v in ("TD3", "DDPG", "TD3-CDQ", "TD3-TPS", "TD3-DP")}
    assert not any(difference(x, final["TD3"]).separates for v, x in final.items() if v != "TD3")
    cdq = difference(final["TD3-CDQ"], final["TD3"])
    assert f"TD3 − CDQ has the lowest mean, {-cdq.mean:.1f} below TD3" in prose and f"p = {cdq.p:.3f}" in prose
    swing = {v: [next(h["step"] for h in history if h["eval_mean"] > -500) for history in shipped.histories(rows, v)]
             for v in ("TD3", "TD3-DP")}
    assert max(swing["TD3-DP"]) < min(swing["TD3"])
    d = difference(swing["TD3-DP"], swing["TD3"])
    assert d.separates and f"by {-d.mean:,.0f} steps on average, and the difference separates (p = {d.p:.3f})" in prose


def test_no_page_or_lesson_holds_a_placeholder():
    """Text to be written from results that did not exist yet is marked TO BE FILLED; none ships."""
    lessons = sorted((ROOT / "notebooks").glob("*.ipynb"))
    held = [path.name for path in [*PAGES, *lessons] if "TO BE FILLED" in path.read_text()]
    assert not held, f"placeholders left in {held}"


def test_presets_table_shows_each_preset_and_other_settings_where_changed():
    rows = generate.presets_table({"Toy-v0": TD3Config(total_steps=5_000, actor_lr=1e-3)}).splitlines()
    assert len(rows) == 4 and "other settings" not in rows[0]
    assert rows[3] == "| `Toy-v0` | 5,000 | 25,000 | 256-256 | 1e-3, 3e-4 | 0.99 | 0.1 | 1,000,000 | 5,000 (10) |"
    rows = generate.presets_table({"Paper-v0": TD3Config(batch_size=100, hidden_sizes=(400, 300))}).splitlines()
    assert rows[0].endswith("| other settings |") and rows[2].endswith("| 5,000 (10) |  |")
    assert "| 400-300 |" in rows[3] and rows[3].endswith("| `batch_size=100` |")


def test_a_page_without_its_markers_is_a_clear_error():
    with pytest.raises(ValueError, match=r"docs/x.md has no generated table 'b': it needs the line"):
        generate.filled("# x\n", "| a |", "x.md", "b")


def test_a_page_holds_several_named_tables_each_filled_in_its_own_place():
    text = "\n\n".join(["# x", generate.BEGIN.format(name="a"), "old a", generate.END, "between",
                         generate.BEGIN.format(name="b"), "old b", generate.END, "after"])
    both = generate.filled(generate.filled(text, "| b |", "x.md", "b"), "| a |", "x.md", "a")
    assert both == text.replace("old a", "| a |").replace("old b", "| b |")


def test_budget_table_scores_td3_and_ddpg_at_each_step_as_the_papers_tables_do():
    # 20 evaluations per run (steps 1,000 to 20,000): TD3's seeds climb to 20 + seed, DDPG's stay at seed
    rows = [{"variant": v, "seed": seed, "step": 1000 * (i + 1), "eval_mean": float(seed + (i + 1 if v == "TD3" else 0))}
            for v in ("TD3", "DDPG") for seed in range(5) for i in range(20)]
    paper = [[{"step": s, "eval_mean": float(s // 1000 + k)} for s in range(1000, 1_000_001, 1000)] for k in (0, 2)]
    lines = generate.budget_table(rows, paper, [10_000, 20_000]).splitlines()
    assert lines[0] == "| steps | score | TD3 | DDPG (AHE) | TD3 − DDPG | 95% interval | p | separates |"
    # At 10,000 steps TD3's runs score (1 + ... + 10) / 10 + seed = 5.5 + seed; every TD3 seed above every DDPG seed.
    low, high = bootstrap_difference_ci([5.5 + s for s in range(5)], list(range(5)))
    assert lines[2] == (f"| 10,000 | Table 2: each run's mean over its last 10 evaluations | 7.5 ± 1.6 | 2.0 ± 1.6 "
                        f"| +5.5 | [+{low:.1f}, +{high:.1f}] | 0.008 | yes |")
    assert lines[3] == "| 10,000 | Table 1: the peak of the mean curve | 12.0 ± 1.6 (at 10,000) | 2.0 ± 1.6 (at 1,000) |  |  |  |  |"
    assert lines[4].startswith("| 20,000 | Table 2: each run's mean over its last 10 evaluations | 17.5 ± 1.6 |")
    # The paper's runs cut at each step and scored the same way (at 10,000 their last 10 evaluations are
    # 1..10 + k, the mean curve peaks at its last step), then its printed tables.
    own = "| 10,000 | the paper's TD3 runs (Hopper-v1, the paper's settings): Table"
    assert lines[6] == f"{own} 2: each run's mean over its last 10 evaluations | 6.5 ± 1.4 | not published |  |  |  |  |"
    assert lines[7] == f"{own} 1: the peak of the mean curve | 11.0 ± 1.4 (at 10,000) | not published |  |  |  |  |"
    assert lines[8].startswith("| 20,000 | the paper's TD3 runs (Hopper-v1, the paper's settings): Table 2: each")
    assert lines[10] == "| 1,000,000 | the paper's Table 2, as printed | 3304.8 | 1061.8 | +2243.0 | not published |  |  |"
    assert lines[11] == "| 1,000,000 | the paper's Table 1, as printed (its std with ddof 0) | 3564.1 ± 114.7 | 1860.0 |  |  |  |  |"
    assert len(lines) == 12
    with pytest.raises(ValueError, match="reached only 20,000 steps"):
        generate.budget_table(rows, paper, [30_000])


def links(page: Path):
    """The relative link targets of a markdown page, without their anchors."""
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if not re.match(r"[a-z]+:", target):
            yield target.split("#")[0]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    missing = [t for t in links(page) if t and not (page.parent / t).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


def test_module_map_names_every_module_and_no_other():
    text = (DOCS / "architecture.md").read_text()
    named = set(re.findall(r"^\| `([\w/]+(?:\.py|/))` \|", text, re.M))
    modules = set()
    for path in (ROOT / "td3_lib").rglob("*.py"):
        relative = path.relative_to(ROOT / "td3_lib").as_posix()
        package = relative.rsplit("/", 1)[0] + "/" if "/" in relative else None
        modules.add(package if package and path.name in ("__init__.py", "__main__.py") else relative)
    assert not modules - named, f"docs/architecture.md does not name {sorted(modules - named)}"
    assert not named - modules, f"docs/architecture.md names modules that do not exist: {sorted(named - modules)}"


PRIMER = ("interaction loop", "return", "discount", "policy", "value", "Q-function", "exploration", "replay buffer",
          "off-policy")
"""The words lesson 00's primer defines in bold, each linked from its glossary entry to the section that defines it."""


def jupyter_sections(notebook: Path) -> dict[str, str]:
    """The markdown of a lesson under each heading, keyed by the heading's anchor as Jupyter writes it
    (the heading's text with its spaces as hyphens)."""
    import json

    sections, anchor = {}, None
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in "".join(cell["source"]).splitlines():
            heading = re.match(r"#+\s+(.*)", line)
            if heading:
                anchor = heading.group(1).strip().replace(" ", "-")
            sections[anchor] = sections.get(anchor, "") + line + "\n"
    return sections


def test_the_glossary_links_each_primer_word_to_its_definition_in_lesson_00():
    sections = jupyter_sections(ROOT / "notebooks" / "00_setup_and_environments.ipynb")
    entries = (ROOT / "notebooks" / "GLOSSARY.md").read_text().split("\n\n")
    for word in PRIMER:
        entry = next((e for e in entries if re.match(rf"\*\*{re.escape(word)}[ .,(]", e, re.I)), None)
        assert entry, f"GLOSSARY.md has no entry for {word!r}"
        anchors = re.findall(r"\]\(00_setup_and_environments\.ipynb#([^)]+)\)", entry)
        assert anchors, f"the glossary's {word!r} does not link to lesson 00"
        assert anchors[0] in sections, f"lesson 00 has no heading with the anchor #{anchors[0]}"
        assert f"**{word}**".lower() in sections[anchors[0]].lower(), f"lesson 00's #{anchors[0]} does not define **{word}**"


COMMAND = re.compile(r"python -m td3_lib (?:train|evaluate|play|sweep)(?: [^`\n#]*)?(?=[`\n#]|$)")


def documented_commands() -> list[tuple[str, str]]:
    """Every ``python -m td3_lib COMMAND ARGS`` of the README and docs/ (in code blocks and inline), its
    continued lines joined and its comment left out: (page, command). A command with ``...`` stands for
    many, and one without arguments names a command (``python -m td3_lib train``): neither is parsed."""
    found = []
    for page in PAGES:
        for match in COMMAND.finditer(page.read_text().replace("\\\n", " ")):
            command = " ".join(match.group(0).split())
            if "..." not in command and len(command.split()) > 4:
                found.append((page.name, command))
    return found


def test_the_docs_show_the_commands_of_every_page():
    commands = documented_commands()
    assert {page for page, _ in commands} >= {"README.md", "usage.md", "sweeps.md", "batched.md"}


@pytest.mark.parametrize("page, command", documented_commands())
def test_every_documented_command_parses(page, command, capsys):
    try:
        build_parser().parse_args(shlex.split(command)[3:])
    except SystemExit:
        pytest.fail(f"{page}: `{command}` does not parse: {capsys.readouterr().err.strip()}")
