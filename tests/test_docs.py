"""The README is a front page and the pages under docs/ stay true to the tree: generated tables match
their sources, every link resolves, and the module map names every module of td3_lib."""

import re
from pathlib import Path

import pytest

from conftest import script_module
from td3_lib import TD3Config

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


def test_presets_table_shows_each_preset_and_other_settings_where_changed():
    rows = generate.presets_table({"Toy-v0": TD3Config(total_steps=5_000, actor_lr=1e-3)}).splitlines()
    assert len(rows) == 4 and "other settings" not in rows[0]
    assert rows[3] == "| `Toy-v0` | 5,000 | 25,000 | 256-256 | 1e-3, 3e-4 | 0.99 | 0.1 | 1,000,000 | 5,000 (10) |"
    rows = generate.presets_table({"Paper-v0": TD3Config(batch_size=100, hidden_sizes=(400, 300))}).splitlines()
    assert rows[0].endswith("| other settings |") and rows[2].endswith("| 5,000 (10) |  |")
    assert "| 400-300 |" in rows[3] and rows[3].endswith("| `batch_size=100` |")


def test_a_page_without_its_markers_is_a_clear_error():
    with pytest.raises(ValueError, match=r"docs/x.md has no generated table: it needs the line"):
        generate.filled("# x\n", "| a |", "x.md")


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
