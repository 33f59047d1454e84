"""Each lesson is written for the learner: short sentences, statistics only where they are taught, no
maintainer material in the learner's path, exercises worth doing with their checks in the library, and
the primer's words defined where the glossary says.

The sentence rules count the prose of markdown cells only (code, maths, tables and headings are left
out): a sentence ends at . ! ? : or ; followed by a capital, and has at least 3 words.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MEAN_WORDS, LONG, TOO_LONG, MAX_LONG = 16, 30, 40, 5
STATISTICS = re.compile(r"\bp\s*=\s*0?\.\d|\bp-values?\b|\bseparat(e|es|ed|ing)\b|\b95%|\bbootstrap(ped)? interval|"
                        r"\bconfidence interval|\bpermutation (test|p)", re.IGNORECASE)
EVIDENCE = "## The evidence"
MAINTAINER = re.compile(r"NBVAL|About the stored outputs|test_\w+\.py|\bgit (show|log|diff|checkout|clone)\b|"
                        r"Xeon|EPYC|\w+\.csv\b")
TESTING = re.compile(r"course's tests|automated tests|\bpytest\b|\bnbval\b", re.IGNORECASE)
"""Talk of how the lessons are tested, in prose or code."""
GLOSSARY_ON_GITHUB = "https://github.com/td3-course/td3-course/blob/main/notebooks/GLOSSARY.md"
PRIMER = ("interaction loop", "return", "discount", "policy", "value", "Q-function", "exploration", "replay buffer",
          "off-policy")


def cells(lesson: Path) -> list[dict]:
    return json.loads(lesson.read_text())["cells"]


def text(cell: dict) -> str:
    return "".join(cell["source"])


def sentences(markdown: str) -> list[tuple[int, str]]:
    """(words, sentence) for each sentence of one markdown cell's prose."""
    for pattern, replacement in ((r"```.*?```", " "), (r"\$\$.*?\$\$", " X "), (r"\$[^$\n]+\$", " X "),
                                 (r"`[^`\n]+`", " code "), (r"<[^>]+>", " "), (r"!?\[([^\]]*)\]\([^)]*\)", r"\1")):
        markdown = re.sub(pattern, replacement, markdown, flags=re.S)
    found = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)|\n(?=#)", markdown):
        lines = [line for line in paragraph.splitlines() if not re.match(r"\s*(#|\|)", line)]
        prose = " ".join(re.sub(r"^\s*(>\s*)?([-*+]|\d+\.)?\s*", "", line) for line in lines).strip()
        prose = re.sub(r"\b(e\.g|i\.e|et al|Fig|Sec|cf|vs)\.", r"\1", prose)
        for sentence in re.split(r"(?<=[.!?:;])\s+(?=[A-Z(*\"'])", prose):
            words = re.findall(r"[A-Za-z0-9][\w'’\-]*", sentence)
            if len(words) >= 3:
                found.append((len(words), sentence))
    return found


def before_the_evidence(lesson: Path) -> list[dict]:
    """The lesson's cells up to its closing "The evidence" section (all of them if it has none)."""
    found = cells(lesson)
    ends = [i for i, c in enumerate(found) if c["cell_type"] == "markdown" and text(c).lstrip().startswith(EVIDENCE)]
    return found[:ends[0]] if ends else found


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_sentences_are_short(lesson):
    lengths = [(n, s) for c in cells(lesson) if c["cell_type"] == "markdown" for n, s in sentences(text(c))]
    assert lengths, "no prose"
    mean = statistics.mean(n for n, _ in lengths)
    assert mean <= MEAN_WORDS, f"mean sentence {mean:.1f} words"
    assert [s for n, s in lengths if n > TOO_LONG] == []
    assert len([s for n, s in lengths if n > LONG]) <= MAX_LONG, [s for n, s in lengths if n > LONG]


def test_the_sentence_rules_count_what_they_say():
    cell = ("# A heading that is long enough to count as a sentence were it prose\n\n"
            "One two three. The `code here` is $x^2$ in a [link](http://x). Three words here.\n\n"
            "| a | table | row | with | many | words |\n\n- A list item of five words.\n- Another item.")
    assert [n for n, _ in sentences(cell)] == [3, 7, 3, 6]


@pytest.mark.parametrize("lesson", [p for p in LESSONS if p.name < "07"], ids=lambda p: p.name[:2])
def test_statistics_wait_for_lesson_07_or_the_evidence(lesson):
    """Intervals, p-values and "separates" are taught in lesson 07; before it they appear only in a lesson's
    closing "The evidence" section, outside code."""
    prose = [re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", text(c), flags=re.S) for c in before_the_evidence(lesson)
             if c["cell_type"] == "markdown"]
    found = [m.group(0) for p in prose for m in [STATISTICS.search(p)] if m]
    assert found == []


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_the_learners_path_ends_before_the_evidence(lesson):
    """Every lesson ends its path the same way: What to remember, References, then the pointer to the next
    lesson (or the course's end); "The evidence", optional reading, comes after them and closes the lesson."""
    prose = [text(c) for c in cells(lesson) if c["cell_type"] == "markdown"]
    def where(pattern):
        return [i for i, p in enumerate(prose) if re.search(pattern, p, re.M)]
    remember, references = where(r"^## What to remember"), where(r"^## References")
    pointer, evidence = where(r"^\*\*(Next:|The end of the course)"), where(r"^## The evidence")
    assert len(remember) == len(references) == len(pointer) == 1, (remember, references, pointer)
    assert remember[0] < references[0] <= pointer[0]
    sections = where(r"^## ")
    assert evidence in ([], [sections[-1]]), "The evidence is not the lesson's last section"
    assert not evidence or pointer[0] < evidence[0], "the pointer to the next lesson comes after The evidence"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_no_maintainer_material_in_the_learners_path(lesson):
    """nbval's marks are cell tags; no test file, git command, CPU model or result file name in the prose or
    the code a learner reads."""
    for index, cell in enumerate(cells(lesson)):
        source = text(cell)
        found = MAINTAINER.search(source) if cell["cell_type"] == "markdown" else re.search(r"NBVAL", source)
        assert not found, f"cell {index}: {found.group(0)!r}"
        found = TESTING.search(source)
        assert not found, f"cell {index}: {found.group(0)!r}"


def test_the_testing_rule_finds_what_it_says():
    for talk in ("as the course's tests set it", "# tiny budgets for automated tests", "run pytest --nbval"):
        assert TESTING.search(talk), talk
    for fine in ("the 100-episode held-out test", "the permutation test's p", "a paired test"):
        assert not TESTING.search(fine), fine


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_every_link_opens_in_colab(lesson):
    """In Colab a lesson's relative link leads nowhere: every link is a full address, but the glossary's,
    which sits beside its address on GitHub."""
    for index, cell in enumerate(cells(lesson)):
        if cell["cell_type"] != "markdown":
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", text(cell)):
            if target == "GLOSSARY.md":
                assert GLOSSARY_ON_GITHUB in text(cell), f"cell {index}: the glossary without its address"
            else:
                assert re.match(r"https?://", target), f"cell {index}: {target!r} does not open in Colab"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_exercises_are_worth_doing_and_checked_by_the_library(lesson):
    """No check is defined in a lesson; every lesson from 01 on sets an exercise whose solution, in a
    collapsed block, is at least 4 lines of code, and calls a check from ``td3_lib.course.checks``."""
    sources = [text(c) for c in cells(lesson)]
    assert not any(re.search(r"^def check_\w+\(", s, re.M) for s in sources), "a check defined in the lesson"
    if lesson.name < "01":
        return
    solutions = [re.search(r"<details>.*?```python\n(.*?)```.*?</details>", s, re.S) for s in sources]
    longest = max((len([line for line in m.group(1).splitlines() if line.strip() and not line.strip().startswith("#")])
                   for m in solutions if m), default=0)
    assert longest >= 4, f"the longest solution has {longest} lines of code"
    assert any("from td3_lib.course.checks import" in s for s in sources)


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_a_lesson_opens_with_its_card(lesson):
    """The first cell: the title, then the idea, the key equation, what the learner builds and the time."""
    first = text(cells(lesson)[0])
    for part in ("**The idea.**", "**The key equation.**", "**You will build**", "**Time:**"):
        assert part in first, part


@pytest.mark.parametrize("lesson", [p for p in LESSONS if p.name[:2] in ("04", "05")], ids=lambda p: p.name[:2])
def test_lessons_04_and_05_are_one_demonstration_long(lesson):
    assert len(cells(lesson)) <= 45


def prose_words(lesson: Path) -> int:
    """The words of a lesson's prose: every markdown cell's sentences, as ``sentences`` counts them."""
    return sum(n for c in cells(lesson) if c["cell_type"] == "markdown" for n, _ in sentences(text(c)))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name[:2])
def test_a_lesson_fits_an_hour(lesson):
    """Within 55 cells and 3,000 words of prose, and its card says how long running every cell takes."""
    assert len(cells(lesson)) <= 55 and prose_words(lesson) <= 3000, (len(cells(lesson)), prose_words(lesson))
    assert re.search(r"\*\*Time:\*\* about an hour.*?(under a minute|about (a|\d+) minutes?)", text(cells(lesson)[0]), re.S)


def test_the_primer_defines_its_words_in_bold_and_the_glossary_links_there():
    primer = " ".join(text(c) for c in cells(LESSONS[0]) if c["cell_type"] == "markdown")
    glossary = (ROOT / "notebooks" / "GLOSSARY.md").read_text()
    for word in PRIMER:
        assert re.search(rf"\*\*{re.escape(word)}\*\*", primer, re.IGNORECASE), word
        assert re.search(rf"{re.escape(word)}.*?\]\(00_setup_and_environments\.ipynb#", glossary,
                         re.IGNORECASE | re.S), word
