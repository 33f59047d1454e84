"""The built wheel: it carries the shipped agents and results, the paper's learning curves, and PyBullet
only as an extra."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from td3_lib.course.paper import PAPER_TASKS
from td3_lib.pretrained import available

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.slow  # builds a wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")  # keeps setuptools' build/ and egg-info out of the tree
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True, cwd=build)
    (path,) = out.glob("td3_lib-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_carries_the_package_data(wheel):
    names = set(wheel.namelist())
    for env_id in available():  # every shipped agent, Hopper-v5 included
        assert {f"td3_lib/pretrained/{env_id}{ext}" for ext in (".pt", ".csv", ".test.json")} <= names
    assert "td3_lib/course/results/manifest.json" in names and "td3_lib/course/quiz.json" in names
    shipped = {p.name for p in (ROOT / "td3_lib" / "course" / "results").glob("*.csv")}
    in_wheel = {n.split("/")[-1] for n in names if n.startswith("td3_lib/course/results/") and n.endswith(".csv")}
    assert in_wheel == shipped
    paper = {f"td3_lib/course/paper/TD3_{task}-v1.csv" for task in PAPER_TASKS} | {"td3_lib/course/paper/LICENSE"}
    assert paper <= names, sorted(paper - names)


def test_pybullet_is_only_an_extra(wheel):
    meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    requires = [line for line in wheel.read(meta).decode().splitlines() if line.startswith("Requires-Dist:")]
    bullet = [r for r in requires if "pybullet" in r.lower()]
    assert bullet and all('extra == "bullet"' in r for r in bullet), bullet
    assert not any("pygame-ce" in r for r in requires)  # Colab's pygame is not overwritten


def test_requirements_install_the_bullet_extra_only_where_pybullet_has_wheels():
    """requirements.txt names the bullet extra's requirements, each only for the Pythons PyBullet has
    wheels for; elsewhere pip would build it from source, minutes with a C++ compiler."""
    import tomllib
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["bullet"]
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    bullet = [line for line in lines if "pybullet" in line.lower() and not line.startswith("#")]
    assert bullet == [f'{requirement}; python_version < "3.12"' for requirement in extra]
    assert "-e .[sweep]" in lines
