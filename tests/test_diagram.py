"""The update diagram: draws for every highlight, colours the highlighted part, refuses unknown parts."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from td3_lib.course.diagram import GREY, INK, PARTS, STRONG, draw_update, highlighted_names  # noqa: E402


def _labels(fig) -> dict[str, str]:
    """gid -> colour (hex) of every named text label in the figure."""
    ax = fig.axes[0]
    return {t.get_gid(): mcolors.to_hex(t.get_color()) for t in ax.texts if t.get_gid()}


def test_the_parts_are_the_lessons():
    assert PARTS == ("bellman_target", "clipped_double_q", "target_policy_smoothing",
                     "delayed_policy_updates")


def test_plain_diagram_draws_every_label_alike():
    fig = draw_update()
    labels = _labels(fig)
    assert {"minibatch", "actor", "actor_target", "critic1", "critic2", "critic1_target", "critic2_target",
            "noise", "min", "y", "critic_loss", "actor_loss"} <= set(labels)
    assert set(labels.values()) == {mcolors.to_hex(INK)}
    plt.close(fig)


@pytest.mark.parametrize("part", PARTS)
def test_highlight_colours_its_part_and_greys_the_rest(part, tmp_path):
    fig = draw_update(highlight=part)
    fig.savefig(tmp_path / f"{part}.png", dpi=50)
    labels = _labels(fig)
    strong = highlighted_names(part)
    assert strong <= set(labels)
    assert len(strong) >= 2 and len(set(labels) - strong) >= 5  # its boxes and the caption; the rest greyed
    for name, colour in labels.items():
        want = STRONG if name in strong else GREY
        assert colour == mcolors.to_hex(want), f"{part}: label {name} is {colour}"
    plt.close(fig)


def test_caption_names_the_lesson():
    for part, lesson in zip(PARTS, ("01", "03", "04", "05")):
        fig = draw_update(part)
        caption = next(t for t in fig.axes[0].texts if t.get_gid() == "caption")
        assert caption.get_text().startswith(f"Lesson {lesson}")
        plt.close(fig)


def test_draws_into_given_axes():
    fig, ax = plt.subplots(figsize=(11, 6))
    assert draw_update("clipped_double_q", ax=ax) is fig
    plt.close(fig)


def test_unknown_highlight_is_refused_in_one_sentence():
    with pytest.raises(ValueError) as err:
        draw_update("double_q")
    msg = str(err.value)
    assert "'double_q'" in msg and all(repr(p) in msg for p in PARTS)
    assert "\n" not in msg


def test_lesson_01_shows_ddpg_target_without_the_minimum():
    """Lesson 01 teaches DDPG: its highlighted target and loss name one critic, no min."""
    texts = {t.get_gid(): t.get_text() for t in draw_update("bellman_target").axes[0].texts if t.get_gid()}
    assert "min" not in texts["y"] and "theta_1'" in texts["y"]
    assert "i = 1, 2" not in texts["critic_loss"]
    plain = {t.get_gid(): t.get_text() for t in draw_update().axes[0].texts if t.get_gid()}
    assert "min" in plain["y"]  # TD3's full update keeps it
    plt.close("all")
