"""One diagram of TD3's update: where each quantity comes from and where it goes.

``draw_update()`` draws the data flow of one iteration of the paper's
Algorithm 1 with matplotlib (boxes and arrows), so it can be regenerated
anywhere. ``draw_update(highlight=part)`` draws one lesson's part in a strong
colour and greys out the rest. Lesson 01's part is DDPG's target, so with
``highlight="bellman_target"`` the target and the critic loss are written for one
critic, and Q1' feeds y directly, past the (grey) minimum that lesson 03 adds.
"""

from __future__ import annotations

from dataclasses import dataclass

PARTS = ("bellman_target", "clipped_double_q", "target_policy_smoothing", "delayed_policy_updates")

CAPTIONS = {
    None: "One iteration of TD3's update (the paper's Algorithm 1)",
    "bellman_target": "Lesson 01 · the Bellman target: y is built from the target networks, "
                      "and the critic regresses onto it",
    "clipped_double_q": "Lesson 03 · clipped double Q: two critics; the target takes "
                        "the smaller of the two target critics",
    "target_policy_smoothing": "Lesson 04 · target policy smoothing: clipped noise on the target "
                               "action before the target critics value it",
    "delayed_policy_updates": "Lesson 05 · delayed policy updates: the actor and the three "
                              "target networks move every d-th iteration",
}

STRONG = "#c0392b"  # the highlighted part: text and edges
STRONG_FACE = "#fbe3df"
GREY = "#a6a6a6"  # everything else when a part is highlighted
GREY_FACE = "#f4f4f4"
INK = "#1f2d3d"  # the normal drawing (no highlight)
FACES = {"data": "#eeeeee", "target": "#fde9c9", "online": "#dbe8f6", "loss": "#dcefdc",
         "op": "#ffffff"}

_BCQ = ("bellman_target", "clipped_double_q")


@dataclass(frozen=True)
class Box:
    """One labelled box: centre (x, y) and size in axes units (about inches at figsize (11, 6))."""

    name: str
    x: float
    y: float
    w: float
    h: float
    label: str
    kind: str  # a key of FACES
    parts: tuple[str, ...] = ()


_TPS, _DPU = ("target_policy_smoothing",), ("delayed_policy_updates",)

BOXES = (
    Box("minibatch", 0.95, 3.0, 1.8, 1.1,
        "minibatch from\nthe replay buffer\n$(s, a, r, s', $not_done$)$", "data", ("bellman_target",)),
    Box("actor_target", 2.95, 4.9, 1.45, 0.7, "target actor\n$\\pi_{\\phi'}(s')$", "target", ("bellman_target",)),
    Box("noise", 5.0, 4.9, 2.25, 0.95, "smoothing noise\n$\\tilde a = \\pi_{\\phi'}(s') + \\epsilon$\n"
        "$\\epsilon = $clip$(\\mathcal{N}(0, \\tilde\\sigma^2), -c, c)$", "op", _TPS),
    Box("critic1_target", 7.15, 5.3, 1.45, 0.55, "$Q_{\\theta_1'}(s', \\tilde a)$", "target", _BCQ),
    Box("critic2_target", 7.15, 4.5, 1.45, 0.55, "$Q_{\\theta_2'}(s', \\tilde a)$", "target", ("clipped_double_q",)),
    Box("min", 8.5, 4.9, 0.7, 0.55, "min", "op", ("clipped_double_q",)),
    Box("y", 10.0, 4.9, 1.95, 0.95,
        "target\n$y = r + \\gamma \\cdot $not_done\n$\\cdot\\,$min$(Q_{\\theta_1'}, Q_{\\theta_2'})$", "op", _BCQ),
    Box("critic2", 7.15, 3.35, 1.75, 0.55, "critic $Q_{\\theta_2}(s, a)$", "online", ("clipped_double_q",)),
    Box("critic1", 7.15, 2.55, 1.75, 0.55, "critic $Q_{\\theta_1}(s, a)$", "online", _BCQ),
    Box("critic_loss", 10.0, 2.95, 1.95, 0.85,
        "critic loss\nMSE$(Q_{\\theta_i}(s, a), y)$\nfor $i = 1, 2$", "loss", _BCQ),
    Box("actor", 2.95, 0.95, 1.45, 0.7, "actor\n$\\pi_\\phi(s)$", "online", _DPU),
    Box("actor_loss", 7.15, 0.95, 2.3, 0.7, "actor loss\n$-$mean $Q_{\\theta_1}(s, \\pi_\\phi(s))$", "loss", _DPU),
)

# Lesson 01 describes DDPG: one critic, no minimum. With its part highlighted these labels
# replace the boxes' own, and Q1' goes straight into y (an arrow passing above the min box).
DDPG_LABELS = {
    "critic1_target": "$Q_{\\theta_1'}(s', a')$",
    "y": "target\n$y = r + \\gamma \\cdot $not_done\n$\\cdot\\,Q_{\\theta_1'}(s', a')$",
    "critic_loss": "critic loss\nMSE$(Q_{\\theta_1}(s, a), y)$",
}
DDPG_SOFT_LABEL = "soft update $\\tau$\n(the critic)"

# (from, to, label, parts): straight arrows between box edges.
ARROWS = (
    ("minibatch", "actor_target", "$s'$", ("bellman_target",)),
    ("actor_target", "noise", "", ("bellman_target",) + _TPS),
    ("noise", "critic1_target", "", _BCQ + ("target_policy_smoothing",)),
    ("noise", "critic2_target", "", ("clipped_double_q", "target_policy_smoothing")),
    ("critic1_target", "min", "", ("clipped_double_q",)),
    ("critic2_target", "min", "", ("clipped_double_q",)),
    ("min", "y", "", ("clipped_double_q",)),
    ("y", "critic_loss", "$y$", _BCQ),
    ("critic1", "critic_loss", "", _BCQ),
    ("critic2", "critic_loss", "", ("clipped_double_q",)),
    ("minibatch", "critic1", "$s, a$", _BCQ),
    ("minibatch", "critic2", "", ("clipped_double_q",)),
    ("minibatch", "actor", "$s$", ("delayed_policy_updates",)),
    ("actor", "actor_loss", "$\\pi_\\phi(s)$", ("delayed_policy_updates",)),
    ("critic1", "actor_loss", "$Q_{\\theta_1}$", ("delayed_policy_updates",)),
)

# (from, to, label): the soft updates theta' <- tau theta + (1 - tau) theta', dashed.
SOFT_UPDATES = (
    ("actor", "actor_target", "soft update $\\tau$"),
    ("critic2", "critic2_target", "soft update $\\tau$\n(both critics)"),
)
SOFT_PARTS = ("bellman_target", "delayed_policy_updates")


def _check_highlight(highlight) -> None:
    if highlight is not None and highlight not in PARTS:
        allowed = ", ".join(repr(p) for p in PARTS)
        raise ValueError(f"Unknown highlight {highlight!r}: use None or one of {allowed}.")


def style(parts, kind: str, highlight) -> dict:
    """Text colour, edge colour, face colour and line width of an element with these ``parts``."""
    if highlight is None:
        return dict(text=INK, edge=INK, face=FACES[kind], lw=1.2)
    if highlight in parts:
        return dict(text=STRONG, edge=STRONG, face=STRONG_FACE, lw=2.2)
    return dict(text=GREY, edge=GREY, face=GREY_FACE, lw=0.9)


def _draw_box(ax, box: Box, highlight) -> None:
    from matplotlib.patches import FancyBboxPatch

    st = style(box.parts, box.kind, highlight)
    ax.add_patch(FancyBboxPatch((box.x - box.w / 2, box.y - box.h / 2), box.w, box.h,
                                boxstyle="round,pad=0.02,rounding_size=0.08", linewidth=st["lw"],
                                edgecolor=st["edge"], facecolor=st["face"], zorder=2))
    label = DDPG_LABELS.get(box.name, box.label) if highlight == "bellman_target" else box.label
    text = ax.text(box.x, box.y, label, ha="center", va="center", fontsize=9.5,
                   color=st["text"], zorder=3, linespacing=1.35)
    text.set_gid(box.name)


def _edge_point(box: Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from the box's centre toward a point leaves the box (plus a small gap)."""
    dx, dy = toward[0] - box.x, toward[1] - box.y
    sx = (box.w / 2 + 0.06) / abs(dx) if dx else float("inf")
    sy = (box.h / 2 + 0.06) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return box.x + s * dx, box.y + s * dy


def _arrow(ax, start: Box, end: Box, label: str, st: dict, dashed: bool = False, name: str = "") -> None:
    p0 = _edge_point(start, (end.x, end.y))
    p1 = _edge_point(end, (start.x, start.y))
    ax.annotate("", xy=p1, xytext=p0, zorder=1,
                arrowprops=dict(arrowstyle="-|>", color=st["edge"], lw=st["lw"],
                                linestyle=(0, (4, 3)) if dashed else "-", shrinkA=0, shrinkB=0))
    if label:
        f = 0.7 if dashed and end.y - start.y > 2 else 0.5  # a long one's label clears the crossing arrows
        mx, my = p0[0] + f * (p1[0] - p0[0]), p0[1] + f * (p1[1] - p0[1])
        text = ax.text(mx + (0.08 if dashed else 0.0), my + (0.0 if dashed else 0.12), label,
                       fontsize=8.5, color=st["text"], ha="left" if dashed else "center", va="center",
                       zorder=3, bbox=dict(facecolor="white", edgecolor="none", pad=0.5, alpha=0.85))
        text.set_gid(name)


def _draw_arrows(ax, boxes: dict, highlight) -> None:
    for src, dst, label, parts in ARROWS:
        st = style(parts, "op", highlight)
        _arrow(ax, boxes[src], boxes[dst], label, st, name=f"arrow:{src}->{dst}")
    st = style(SOFT_PARTS, "op", highlight)
    for src, dst, label in SOFT_UPDATES:
        if highlight == "bellman_target" and dst == "critic2_target":
            label = DDPG_SOFT_LABEL
        _arrow(ax, boxes[src], boxes[dst], label, st, dashed=True, name=f"soft:{src}->{dst}")
    if highlight == "bellman_target":
        _draw_q1_into_y(ax, boxes, highlight)


def _draw_q1_into_y(ax, boxes: dict, highlight) -> None:
    """DDPG's Q1' straight into y, just above the minimum's box (which TD3's target passes through)."""
    q1, y = boxes["critic1_target"], boxes["y"]
    st = style(("bellman_target",), "op", highlight)
    ax.annotate("", xy=(y.x - y.w / 2 - 0.06, q1.y), xytext=(q1.x + q1.w / 2 + 0.06, q1.y), zorder=1,
                arrowprops=dict(arrowstyle="-|>", color=st["edge"], lw=st["lw"], shrinkA=0, shrinkB=0))


def _draw_reward_path(ax, boxes: dict, highlight) -> None:
    """r and not_done go from the minibatch over the top of the diagram into the target y."""
    st = style(("bellman_target",), "op", highlight)
    mb, y = boxes["minibatch"], boxes["y"]
    top = 5.95
    xs = [mb.x, mb.x, y.x, y.x]
    ys = [mb.y + mb.h / 2 + 0.06, top, top, y.y + y.h / 2 + 0.06]
    ax.plot(xs[:3], ys[:3], color=st["edge"], lw=st["lw"], zorder=1, solid_capstyle="butt")
    ax.annotate("", xy=(xs[3], ys[3]), xytext=(xs[2], ys[2]), zorder=1,
                arrowprops=dict(arrowstyle="-|>", color=st["edge"], lw=st["lw"], shrinkA=0, shrinkB=0))
    text = ax.text((mb.x + y.x) / 2, top + 0.13, "$r$, not_done", fontsize=8.5, color=st["text"],
                   ha="center", va="center", zorder=3)
    text.set_gid("path:reward")


def _draw_delay_frame(ax, highlight) -> None:
    """A dashed frame around what happens only every d-th iteration: the actor step and the soft updates."""
    from matplotlib.patches import FancyBboxPatch

    st = style(("delayed_policy_updates",), "op", highlight)
    ax.add_patch(FancyBboxPatch((2.05, 0.3), 6.45, 1.3, boxstyle="round,pad=0.02,rounding_size=0.1",
                                linewidth=st["lw"], linestyle=(0, (5, 3)), edgecolor=st["edge"],
                                facecolor="none", zorder=0))
    text = ax.text(8.65, 0.95, "every $d$-th iteration\n(policy_freq, $d = 2$):\nactor step, then soft\n"
                   "updates of the three\ntarget networks", fontsize=8.5, color=st["text"], ha="left",
                   va="center", zorder=3, linespacing=1.3)
    text.set_gid("frame:delay")


def _caption(ax, highlight) -> None:
    ax.text(5.5, 6.55, "TD3's update: data flow of one iteration", fontsize=12.5, weight="bold",
            ha="center", va="center", color=INK)
    color = INK if highlight is None else STRONG
    text = ax.text(5.5, -0.2, CAPTIONS[highlight], fontsize=10, ha="center", va="center", color=color,
                   style="italic")
    text.set_gid("caption")


def draw_update(highlight: str | None = None, ax=None):
    """Draw TD3's update data flow; returns the matplotlib Figure.

    ``highlight`` is None (all parts drawn alike) or one of ``PARTS``: that
    lesson's part is drawn in a strong colour and the rest greyed out, with a
    caption naming the lesson. ``ax``: draw into these axes instead of a new figure.
    """
    _check_highlight(highlight)
    import matplotlib.pyplot as plt

    if ax is None:
        fig = plt.figure(figsize=(11, 6))
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))  # the whole figure: units are about inches
    ax.set_xlim(-0.05, 11.05)
    ax.set_ylim(-0.45, 6.8)
    ax.axis("off")
    boxes = {b.name: b for b in BOXES}
    for box in BOXES:
        _draw_box(ax, box, highlight)
    _draw_arrows(ax, boxes, highlight)
    _draw_reward_path(ax, boxes, highlight)
    _draw_delay_frame(ax, highlight)
    _caption(ax, highlight)
    return ax.figure


def highlighted_names(highlight: str) -> set[str]:
    """The gids of the text labels drawn in the strong colour for ``highlight`` (used by the tests)."""
    _check_highlight(highlight)
    names = {b.name for b in BOXES if highlight in b.parts}
    names |= {f"arrow:{s}->{d}" for s, d, label, parts in ARROWS if label and highlight in parts}
    if highlight in SOFT_PARTS:
        names |= {f"soft:{s}->{d}" for s, d, _ in SOFT_UPDATES}
    if highlight == "bellman_target":
        names.add("path:reward")
    if highlight == "delayed_policy_updates":
        names.add("frame:delay")
    return names | {"caption"}
